"""ML Productivity Goodput (seed 000): MPG = SG x RG x PG from job event logs."""
