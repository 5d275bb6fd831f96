"""ML Productivity Goodput (the ML Productivity Goodput paper): MPG = SG x RG x PG from job event logs."""
