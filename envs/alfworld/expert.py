"""The privileged expert: reads the engine's true state and writes the plan an ALFRED task needs.

ALFWorld's engine ships two experts. The fast-downward planner (``policy_commands``) is optimal but
runs an A* search whose cost explodes with the number of movable objects: on generated kitchens we
measured 4-30 s per plan for heat/cool tasks and once 6 minutes for a pick-two task. The hand-coded
expert is fast but explores without knowledge and uses the global RNG. This expert sits between: it
reads the engine's facts (where every object is, what is open, what the agent holds, which lamp is
where) and emits the canonical ALFRED subgoal sequence (find → take → transform → place) as real
engine commands. Every plan it makes for a generated game is executed by the engine and checked
``won`` before the game enters a split, and the env still offers the planner (``expert="planner"``).

It is deterministic (ties broken by name) and works for official games too: it needs only the
facts and the ``pddl_params`` of ``traj_data.json``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class WorldView:
    """The facts the expert needs, by demangled engine names ("apple 1", "countertop 2")."""

    agent_at: str = ""
    holding: str | None = None
    recep_at: dict[str, str] = field(default_factory=dict)  # receptacle -> location
    recep_type: dict[str, str] = field(default_factory=dict)  # receptacle -> "fridge"
    obj_type: dict[str, str] = field(default_factory=dict)  # object -> "apple"
    obj_in: dict[str, str] = field(default_factory=dict)  # object -> receptacle
    openable: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)
    hot: set[str] = field(default_factory=set)
    cool: set[str] = field(default_factory=set)
    clean: set[str] = field(default_factory=set)
    toggled: set[str] = field(default_factory=set)
    can_contain: dict[str, set[str]] = field(
        default_factory=lambda: defaultdict(set)
    )  # rtype -> otypes

    @classmethod
    def from_facts(cls, facts) -> WorldView:
        w = cls()
        for f in facts:
            args = [a.name.strip() for a in f.arguments]
            name = f.name
            if name == "atlocation":
                w.agent_at = args[1]
            elif name == "holds":
                w.holding = args[1]
            elif name == "receptacleatlocation":
                w.recep_at[args[0]] = args[1]
            elif name == "receptacletype":
                w.recep_type[args[0]] = _type_name(args[1])
            elif name == "objecttype":
                w.obj_type[args[0]] = _type_name(args[1])
            elif name == "inreceptacle":
                w.obj_in[args[0]] = args[1]
            elif name == "openable":
                w.openable.add(args[0])
            elif name == "opened":
                w.opened.add(args[0])
            elif name == "ishot":
                w.hot.add(args[0])
            elif name == "iscool":
                w.cool.add(args[0])
            elif name == "isclean":
                w.clean.add(args[0])
            elif name == "istoggled":
                w.toggled.add(args[0])
            elif name == "cancontain":
                w.can_contain[_type_name(args[0])].add(_type_name(args[1]))
        return w

    def receptacles_of(self, rtype: str) -> list[str]:
        """Receptacles of ``rtype``, the ones that need no opening first, then by name."""
        found = [r for r, t in self.recep_type.items() if t == rtype]
        return sorted(found, key=lambda r: (r in self.openable, _natural(r)))


def _type_name(s: str) -> str:
    s = s.strip().lower()
    return s[: -len("type")] if s.endswith("type") else s


def _natural(name: str) -> tuple:
    head, _, num = name.rpartition(" ")
    return (head, int(num)) if num.isdigit() else (name, 0)


class _Planner:
    """Accumulates commands while tracking where the agent is and what it holds."""

    def __init__(self, w: WorldView):
        self.w = w
        self.at = w.agent_at
        self.holding = w.holding
        self.opened = set(w.opened)
        self.cmds: list[str] = []

    def go(self, recep: str) -> None:
        if self.w.recep_at.get(recep) != self.at:
            self.cmds.append(f"go to {recep}")
            self.at = self.w.recep_at[recep]

    def open(self, recep: str) -> None:
        if recep in self.w.openable and recep not in self.opened:
            self.cmds.append(f"open {recep}")
            self.opened.add(recep)

    def take(self, obj: str, recep: str) -> None:
        self.go(recep)
        self.open(recep)
        self.cmds.append(f"take {obj} from {recep}")
        self.holding = obj

    def put(self, recep: str) -> None:
        self.go(recep)
        self.open(recep)
        self.cmds.append(f"move {self.holding} to {recep}")
        self.holding = None


def expert_plan(w: WorldView, task_type: str, params: dict) -> list[str]:
    """The command sequence that completes the task from state ``w`` (empty if it cannot)."""
    obj = params.get("object_target", "").lower()
    parent = params.get("parent_target", "").lower()
    toggle = params.get("toggle_target", "").lower()
    p = _Planner(w)
    targets = sorted((o for o, t in w.obj_type.items() if t == obj), key=_natural)
    if not targets:
        return []

    transform = {
        "pick_heat_then_place_in_recep": ("heat", "microwave", w.hot),
        "pick_cool_then_place_in_recep": ("cool", "fridge", w.cool),
        "pick_clean_then_place_in_recep": ("clean", "sinkbasin", w.clean),
    }.get(task_type)

    def done_in(o: str, recep: str) -> bool:
        ok = w.obj_in.get(o) == recep and w.recep_type.get(recep) == parent
        return ok and (transform is None or o in transform[2])

    # hands must be free unless we already hold something useful
    if p.holding is not None and p.holding not in targets:
        _put_away(p, w)

    if task_type == "look_at_obj_in_light":
        lamps = sorted(
            (o for o, t in w.obj_type.items() if t == toggle and o in w.obj_in), key=_natural
        )
        if not lamps:
            return []
        if p.holding is None:
            src = _best_source(w, targets, exclude=set())
            p.take(src, w.obj_in[src])
        lamp = lamps[0]
        p.go(w.obj_in[lamp])
        if lamp not in w.toggled:
            p.cmds.append(f"use {lamp}")
        return p.cmds

    dests = w.receptacles_of(parent)
    if not dests:
        return []
    if task_type == "pick_two_obj_and_place":
        # both instances must end up in the same receptacle: the one that already has most
        dest = max(dests, key=lambda r: sum(w.obj_in.get(o) == r for o in targets))
        need = 2 - sum(w.obj_in.get(o) == dest for o in targets)
        placed = {o for o in targets if w.obj_in.get(o) == dest}
        for _ in range(max(need, 0)):
            if p.holding is None or p.holding in placed:
                src = _best_source(w, targets, exclude=placed)
                if src is None:
                    return []
                p.take(src, w.obj_in[src])
            placed.add(p.holding)
            p.put(dest)
        return p.cmds

    if any(done_in(o, r) for o in targets for r in dests):
        return p.cmds
    if p.holding is None:
        src = _best_source(w, targets, exclude=set())
        if src is None:
            return []
        p.take(src, w.obj_in[src])
    if transform is not None and p.holding not in transform[2]:
        verb, appliance_type, _ = transform
        appliances = w.receptacles_of(appliance_type)  # the domain cleans in a SinkBasin only
        if not appliances:
            return []
        p.go(appliances[0])
        p.cmds.append(f"{verb} {p.holding} with {appliances[0]}")
    p.put(dests[0])
    return p.cmds


def _best_source(w: WorldView, targets: list[str], exclude: set[str]) -> str | None:
    """The target instance cheapest to reach: out in the open first, then by name."""
    cands = [o for o in targets if o in w.obj_in and o not in exclude]
    if not cands:
        return None
    return min(cands, key=lambda o: (w.obj_in[o] in w.openable, _natural(o)))


def _put_away(p: _Planner, w: WorldView) -> None:
    """Put down an object that is not needed, where the domain allows it."""
    otype = w.obj_type.get(p.holding or "", "")
    spots = sorted(
        (r for r, t in w.recep_type.items() if otype in w.can_contain.get(t, ())),
        key=lambda r: (r in w.openable, r not in w.recep_at or w.recep_at[r] != p.at, _natural(r)),
    )
    if spots:
        p.put(spots[0])
