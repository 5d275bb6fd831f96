"""Placing jobs through the allocation and cross-connect code, scheduling and preemption (mixin of Simulator)."""

from __future__ import annotations

import itertools

from tpufleet import allocation, xconnect
from tpufleet.health import Health
from tpufleet.shapes import Shape
from tpufleet.simulation.spec import VICTIM_ORDER, Job


class Placement:
    # ---- placement ------------------------------------------------------------------------------------------
    def _health(self) -> Health:
        h = Health()
        h.cubes_out = {c: ["sim"] for c, n in self.out_counts.items() if n > 0}
        h.ocs_down = {k: ["sim"] for k, n in self.ocs_down.items() if n > 0}
        return h

    def _free_cubes(self, pod: str, health: Health) -> list[str]:
        used = allocation.machine_usage(self.slices)
        return [c for c in self.fleet.pod_by_name[pod].cubes if c not in used and health.cube_ok(c)]

    def _boxes(self, grid_dims) -> "object":
        """Every box of the fixed 4x4x4 cube torus with these sides, any orientation: [boxes, cubes] positions."""
        import numpy as np

        if grid_dims not in self._box_cache:
            boxes = []
            for dims in sorted(set(itertools.permutations(grid_dims))):
                cells = list(itertools.product(*(range(n) for n in dims)))
                for origin in itertools.product(range(4), repeat=3):
                    boxes.append([((origin[0] + a) % 4) * 16 + ((origin[1] + b) % 4) * 4 + (origin[2] + c) % 4
                                  for a, b, c in cells])
            self._box_cache[grid_dims] = np.array(boxes, dtype=np.int64)
        return self._box_cache[grid_dims]

    def _static_box(self, shape: Shape, pod: str, health: Health):
        import numpy as np

        cubes = self.fleet.pod_by_name[pod].cubes
        if len(cubes) != 64:
            return None
        free = set(self._free_cubes(pod, health))
        mask = np.array([c in free for c in cubes])
        boxes = self._boxes(shape.cube_grid)
        fits = np.flatnonzero(mask[boxes].all(axis=1))
        if not len(fits):
            return None
        box = [cubes[i] for i in boxes[fits[0]]]
        return allocation.Allocation(pod, box, allocation.grid_coords(shape, box))

    def _place(self, job: Job, commit: bool = True):
        health = self._health()
        shape = job.shape
        multi = not shape.is_subcube
        ft_routing = self.o.mode == "reconfigurable-ft" and job.ft
        for pod in self.fleet.pods:
            if multi and not ft_routing and any(k.startswith(pod.name + "/") for k in health.ocs_down):
                continue
            if multi and self.fast_paths and len(self._free_cubes(pod.name, health)) < shape.cubes:
                continue
            try:
                if self.o.mode == "static" and multi:
                    alloc = self._static_box(shape, pod.name, health)
                    if alloc is None:
                        continue
                else:
                    alloc = allocation.allocate(shape, self.fleet, self.slices, health, pod=pod.name)
            except Exception:  # noqa: BLE001 - a refusal means: not in this pod
                continue
            if multi:
                plan = xconnect.plan(shape, self.fleet, alloc.coords, self.ocs_state, health, ft_routing)
                if plan.blocked:
                    continue
                if not commit:
                    return alloc
                self.ocs_state = xconnect.apply(self.ocs_state, plan.changes)
                self.stats["xconnect_changes"] += plan.summary["add"] + plan.summary["remove"]
            return alloc
        return None

    # ---- scheduling -----------------------------------------------------------------------------------------
    def schedule(self, t: float) -> None:
        self.waiting.sort(key=lambda j: (j.priority, j.seq))
        placed = True
        while placed:
            placed = False
            hopeless: set = set()  # shapes that did not fit since the last placement
            for job in list(self.waiting):
                key = (job.shape, job.ft, job.priority)
                if key in hopeless and self.fast_paths:
                    continue
                alloc = self._place(job)
                if alloc is None and self._preempt_for(job, t):
                    alloc = self._place(job)
                if alloc is not None:
                    self.waiting.remove(job)
                    self._start(job, alloc, t)
                    placed = True
                    hopeless.clear()
                else:
                    hopeless.add(key)

    def _preempt_for(self, job: Job, t: float) -> bool:
        """Evict the fewest lower-priority jobs (medium first, extra-large last) that let `job` fit; none if no
        set of them would."""
        victims = [j for j in self.running.values() if j.priority > job.priority]
        if not victims:
            return False
        for pod in self.fleet.pods:
            mine = sorted((j for j in victims if j.alloc.pod == pod.name),
                          key=lambda j: (VICTIM_ORDER[j.size], -j.priority, -j.seq))
            chosen = []
            saved = dict(self.slices)
            try:
                for victim in mine:
                    chosen.append(victim)
                    self.slices.pop(victim.id, None)
                    if self._place(job, commit=False) is not None:
                        break
                else:
                    chosen = []
            finally:
                self.slices = saved
            if chosen:
                for victim in chosen:
                    self.disrupt(victim, t, "preemption")
                return True
        return False

