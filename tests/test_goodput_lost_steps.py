"""A step is wasted when the job later goes back to or before it, even when that step itself is never logged
again (README, productive / wasted): by hand, 8 chips, no checkpoints logged.

Run 1: steps 1-4 at 0, 10, 20, 30 s, a failure at 40 s. Run 2 from 100 s resumes at step 3 (step 4 is never
logged again), the end at 110 s. Steps 1, 2 and run 2's step 3 are productive (30 s); run 1's steps 3 and 4 are
wasted (20 s), step 4 too because step 3 came after it; recovery from the failure to the restart (60 s).
"""

from __future__ import annotations

import json

B = 1767571200.0


def test_a_step_the_job_went_back_past_is_wasted_though_not_logged_again(cli, tmp_path):
    events = [("job_start", 0, None), *((("step_start", 10 * k, k + 1)) for k in range(4)), ("failure", 40, None)]
    events += [("job_start", 100, None), ("step_start", 100, 3), ("job_end", 110, None)]
    lines = [{"type": "job", "job": "a", "accelerator": "tpu-v4", "chips": 8, "phase": "training", "ideal_step_s": 10}]
    for name, at, step in events:
        lines.append({"type": "event", "job": "a", "time": B + at, "event": name} | ({"step": step} if step else {}))
    log = tmp_path / "a.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    assert (j["all_allocated_s"], j["productive_s"], j["productive_steps"]) == (110.0, 30.0, 3)
    assert j["badput_s"]["wasted_progress_from_disruption"] == 20.0
    assert j["badput_s"]["infrastructure_recovery_from_disruption"] == 60.0


def test_a_silent_restart_after_a_run_of_one_step_is_a_disruption_at_its_start(cli, tmp_path):
    # run 1: step 1 at 0 s, then nothing until a restart at 100 s that goes on at step 2 (not redone): the run has
    # no median step, so the disruption is at step 1's start; recovery 0..100 s, and step 1 (its time unknown)
    # is no productive step. Run 2: steps 2, 3 at 100, 110 s, the end at 120 s: 20 s productive.
    events = [("job_start", 0, None), ("step_start", 0, 1), ("job_start", 100, None), ("step_start", 100, 2)]
    events += [("step_start", 110, 3), ("job_end", 120, None)]
    lines = [{"type": "job", "job": "a", "accelerator": "tpu-v4", "chips": 8, "phase": "training", "ideal_step_s": 10}]
    for name, at, step in events:
        lines.append({"type": "event", "job": "a", "time": B + at, "event": name} | ({"step": step} if step else {}))
    log = tmp_path / "a.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = cli("goodput-report", log, "-o", "json", state=False)
    assert r.code == 0, r.err
    (j,) = r.json["jobs"]
    assert (j["disruptions"], j["disruptions_inferred"], j["productive_steps"], j["productive_s"]) == (1, 1, 2, 20.0)
    assert j["badput_s"]["infrastructure_recovery_from_disruption"] == 100.0
