"""The mixin's dashboard says what the CLI says: its open-faults panel, evaluated by promtool over the series
`tpufleet metrics` exports, shows the number `tpufleet status` gives (faults and drains)."""

from __future__ import annotations

import json

import yaml
from prometheus_client.parser import text_string_to_metric_families
from test_monitoring import DASHBOARD, RULES, needs_promtool, promtool


def _series(metrics_text: str, names: set[str]) -> list[dict[str, str]]:
    """promtool input series of the samples of `names`, as one scrape of a serve instance would give them."""
    out = []
    for family in text_string_to_metric_families(metrics_text):
        for s in family.samples:
            if s.name in names:
                labels = {**s.labels, "instance": "fleet:9478", "job": "tpufleet"}
                text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                out.append({"series": f"{s.name}{{{text}}}", "values": f"{s.value:g}x10"})
    return out


@needs_promtool
def test_the_open_faults_panel_shows_the_open_faults_status_counts(fleet, tmp_path):
    for step in (
        ("inject-fault", "host:c01/2"),
        ("inject-fault", "ocs:pod0/x/3"),
        ("inject-fault", "host:c02/4", "--planned"),
        ("inject-fault", "ocs:pod0/y/2", "--planned"),
    ):
        assert fleet(*step).code == 0, step
    status = fleet("status", "-o", "json").json
    assert status["open_faults"] == 4
    panels = json.loads(DASHBOARD.read_text())["panels"]
    panel = next(p for p in panels if p["type"] == "stat" and p["title"].startswith("Open faults"))
    expr = panel["targets"][0]["expr"]  # the panel's headline figure: a recording rule of the mixin
    series = _series(fleet("metrics").out, {"tpufleet_open_faults", "tpufleet_planned_drains"})
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {"expr": expr, "eval_time": "5m", "exp_samples": [{"labels": expr, "value": status["open_faults"]}]}
                ],
            }
        ],
    }
    (tmp_path / "panel.test.yml").write_text(yaml.safe_dump(test))
    r = promtool("test", "rules", "panel.test.yml", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
