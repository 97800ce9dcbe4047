"""ALFRED-style PDDL problems generated from what the ``alfworld`` wheel ships.

The wheel carries no games (``json_2.1.1`` is a separate download), but it does carry everything a
game is made of: the PDDL domain and text grammar (``alfworld/data``), the receptacles and their
poses of 120 AI2-THOR floor plans (``alfworld/gen/layouts``), which object types each receptacle can
hold and which objects can be heated / cooled / cleaned (``alfworld.gen.constants``), and the goal
formulas and task sentences of every task type (``alfworld.gen.goal_library``). This module samples a
room full of objects and a goal from those tables and writes the same three files an official game
folder holds: ``initial_state.pddl``, ``traj_data.json`` and ``game.tw-pddl``.

Everything is a pure function of ``(floor plan, task type, seed)``: the same call gives the same
bytes on any machine (no global RNG, sorted iteration everywhere).

Gotchas the real planner taught us (each one is handled below and tested):
- a malformed problem makes fast-downward call ``sys.exit`` (``SystemExit``), not raise;
- object type names and receptacle type names must not overlap (``Bowl`` is an object here, never
  a receptacle type);
- ``canContain`` may mention only declared types;
- a lamp must sit ``inReceptacle`` something, or ``use desklamp 1`` is never admissible.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

GENERATOR_VERSION = "alfgen-1"

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
"""The six ALFWorld task types, in the numbering of alfworld's ``TASK_TYPES`` (1..6)."""

ROOM_OF_SCENE = (
    (range(1, 31), "Kitchen"),
    (range(201, 231), "LivingRoom"),
    (range(301, 331), "Bedroom"),
    (range(401, 431), "Bathroom"),
)

LAMPS = ("DeskLamp", "FloorLamp")
# Where a lamp may stand (never inside something that opens; the lamp must be usable in place).
LAMP_HOSTS = ("SideTable", "Desk", "Dresser", "DiningTable", "CoffeeTable", "TVStand", "Shelf")
# Receptacles that would make a task trivial or meaningless as its destination (ALFRED does the same).
FORBIDDEN_DESTINATION = {
    "pick_clean_then_place_in_recep": {"SinkBasin", "BathtubBasin"},
    "pick_heat_then_place_in_recep": {"Microwave"},
    "pick_cool_then_place_in_recep": {"Fridge"},
}
# P(>= 2 instances), P(3 instances) of each object type; ALFRED allows up to 3
# (alfworld.gen.constants.MAX_NUM_OF_OBJ_INSTANCES)
INSTANCE_ODDS = (0.3, 0.08)


# --- what the wheel ships -------------------------------------------------------------------------
def alfworld_file(*parts: str) -> Path:
    """A file inside the installed ``alfworld`` package, found without importing it (``import
    alfworld`` creates ``~/.cache/alfworld`` and overwrites ``$ALFWORLD_DATA``)."""
    spec = importlib.util.find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "ALFWorld needs the alfworld extra: pip install 'seed-gym[alfworld]' (alfworld==0.4.2)"
        )
    return Path(spec.submodule_search_locations[0]).joinpath(*parts)


@cache
def domain_text() -> str:
    return alfworld_file("data", "alfred.pddl").read_text()


@cache
def grammar_text() -> str:
    return alfworld_file("data", "alfred.twl2").read_text()


@dataclass(frozen=True)
class Tables:
    """The object/receptacle tables of ``alfworld.gen.constants`` and ``goal_library``."""

    objects: tuple[str, ...]
    static_receptacles: frozenset[str]
    can_contain: dict[str, frozenset[str]]  # receptacle type -> object types
    pickupable: frozenset[str]
    openable: frozenset[str]
    heatable: frozenset[str]
    coolable: frozenset[str]
    cleanable: frozenset[str]
    goals: dict[str, dict]


@cache
def tables() -> Tables:
    import alfworld.gen.constants as C
    import alfworld.gen.goal_library as G

    static = frozenset(C.RECEPTACLES) - frozenset(C.MOVABLE_RECEPTACLES)
    objects = tuple(sorted(o for o in C.OBJECTS if o not in static))
    unsliced = {o for o in objects if not o.endswith("Sliced")}
    can_contain = {
        r: frozenset(o for o in objs if o in unsliced)
        for r, objs in sorted(C.VAL_RECEPTACLE_OBJECTS.items())
        if r in static
    }
    pickupable = frozenset().union(*can_contain.values())
    act = C.VAL_ACTION_OBJECTS
    return Tables(
        objects=tuple(sorted(unsliced)),
        static_receptacles=static,
        can_contain=can_contain,
        pickupable=pickupable,
        openable=frozenset(C.OPENABLE_CLASS_LIST) & static,
        heatable=frozenset(act["Heatable"]) & pickupable,
        coolable=frozenset(act["Coolable"]) & pickupable,
        cleanable=frozenset(act["Cleanable"]) & pickupable,
        goals={t: G.gdict[t] for t in TASK_TYPES},
    )


# --- scenes ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Receptacle:
    rid: str  # ALFRED object id, e.g. "Cabinet|+00.68|+00.50|-02.20" or "Sink|...|SinkBasin"
    rtype: str
    loc: tuple[int, int, int, int]  # grid x, grid z, rotation / 90, camera horizon


@dataclass(frozen=True)
class Scene:
    floor_plan: str
    scene_num: int
    room: str
    receptacles: tuple[Receptacle, ...]
    object_types: tuple[str, ...]  # pickupable types present in the room
    lamps: tuple[str, ...]  # lamp types present
    points: tuple[tuple[int, int], ...] = field(repr=False)  # reachable grid points


def room_of(scene_num: int) -> str:
    for nums, room in ROOM_OF_SCENE:
        if scene_num in nums:
            return room
    raise ValueError(f"FloorPlan{scene_num} is not an ALFRED scene")


def floor_plans() -> list[int]:
    """Scene numbers with a layout in the wheel, sorted."""
    folder = alfworld_file("gen", "layouts")
    nums = {
        int(p.name[len("FloorPlan") :].split("-")[0])
        for p in folder.glob("FloorPlan*-openable.json")
    }
    return sorted(nums)


def _coord(v: float) -> str:
    """ALFRED's object-id number format: +01.25, -00.50, 00.00."""
    sign = "" if round(v, 2) == 0 else ("+" if v > 0 else "-")
    return f"{sign}{abs(v):05.2f}"


def _rtype_of(rid: str) -> str:
    parts = rid.split("|")
    return parts[4] if len(parts) == 5 else parts[0]


def _loc_of(pose: list[float]) -> tuple[int, int, int, int]:
    x, z, rot, horizon = pose
    return (
        int(round(x / 0.25)),
        int(round(z / 0.25)),
        int(round(rot / 90)) % 4,
        int(round(horizon)),
    )


@cache
def load_scene(scene_num: int) -> Scene:
    """Receptacles with their ids and poses from ``FloorPlanN-openable.json``; receptacle types the
    room lists in ``-objects.json`` but has no pose for get one instance at a reachable point chosen
    by a scene-seeded RNG (deterministic, independent of the task)."""
    t = tables()
    folder = alfworld_file("gen", "layouts")
    name = f"FloorPlan{scene_num}"
    present = json.loads((folder / f"{name}-objects.json").read_text())
    poses = json.loads((folder / f"{name}-openable.json").read_text())
    points = np.load(folder / f"{name}-layout.npy")
    grid = tuple(sorted({(int(round(x / 0.25)), int(round(z / 0.25))) for x, z in points}))

    receptacles = [
        Receptacle(rid, _rtype_of(rid), _loc_of(pose))
        for rid, pose in sorted(poses.items())
        if _rtype_of(rid) in t.static_receptacles
    ]
    have = {r.rtype for r in receptacles}
    rng = np.random.default_rng(1_000_003 * scene_num)
    for rtype in sorted(set(present) & t.static_receptacles - have):
        n_inst, n_locs = (4, 2) if rtype == "StoveBurner" else (1, 1)
        spots = [grid[int(rng.integers(len(grid)))] for _ in range(n_locs)]
        for i in range(n_inst):
            gx, gz = spots[i % n_locs]
            rot, horizon = int(rng.integers(4)), int(rng.choice([0, 30, 45, 60]))
            x, y, z = (
                gx * 0.25 + rng.uniform(-0.4, 0.4),
                rng.uniform(0.2, 1.2),
                gz * 0.25 + rng.uniform(-0.4, 0.4),
            )
            rid = f"{rtype}|{_coord(x)}|{_coord(y)}|{_coord(z)}"
            receptacles.append(Receptacle(rid, rtype, (gx, gz, rot, horizon)))
    receptacles.sort(key=lambda r: r.rid)
    object_types = tuple(sorted(set(present) & t.pickupable))
    lamps = tuple(sorted(set(present) & set(LAMPS)))
    return Scene(name, scene_num, room_of(scene_num), tuple(receptacles), object_types, lamps, grid)


# --- tasks ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskSpec:
    task_type: str
    object_target: str
    parent_target: str = ""  # receptacle type (empty for look_at_obj_in_light)
    toggle_target: str = ""  # lamp type (look_at_obj_in_light only)

    @property
    def folder_name(self) -> str:
        """``<type>-<Object>-<MovableRecep>-<Parent>-<scene>`` minus the scene, as in json_2.1.1."""
        parent = (
            self.toggle_target if self.task_type == "look_at_obj_in_light" else self.parent_target
        )
        return f"{self.task_type}-{self.object_target}-None-{parent}"


def candidate_tasks(scene: Scene, task_type: str) -> list[TaskSpec]:
    """Every (object, destination) pair of ``task_type`` this room supports, sorted."""
    t = tables()
    rtypes = sorted({r.rtype for r in scene.receptacles})
    objs = set(scene.object_types)
    if task_type == "look_at_obj_in_light":
        if scene.room not in ("LivingRoom", "Bedroom"):
            return []
        hosts = [r for r in rtypes if r not in t.openable]
        if not hosts:
            return []
        return [TaskSpec(task_type, o, "", lamp) for lamp in scene.lamps for o in sorted(objs)]
    need = {
        "pick_clean_then_place_in_recep": (t.cleanable, "SinkBasin", {"Kitchen", "Bathroom"}),
        "pick_heat_then_place_in_recep": (t.heatable, "Microwave", {"Kitchen"}),
        "pick_cool_then_place_in_recep": (t.coolable, "Fridge", {"Kitchen"}),
    }
    if task_type in need:
        allowed, appliance, rooms = need[task_type]
        if scene.room not in rooms or appliance not in rtypes:
            return []
        objs &= allowed
    forbidden = FORBIDDEN_DESTINATION.get(task_type, set())
    out = []
    for o in sorted(objs):
        homes = [r for r in rtypes if o in t.can_contain.get(r, ())]
        for r in homes:
            # the object must be able to start somewhere that is not the destination
            if r not in forbidden and any(h != r for h in homes):
                out.append(TaskSpec(task_type, o, r))
    return out


@dataclass
class Problem:
    """One generated game, ready to be written as an official game folder."""

    scene: Scene
    spec: TaskSpec
    seed: int
    description: str
    pddl: str
    start: tuple[int, int, int, int]
    placements: dict[str, str]  # object id -> receptacle id

    @property
    def traj_data(self) -> dict:
        s = self.spec
        return {
            "task_id": self.trial,
            "task_type": s.task_type,
            "pddl_params": {
                "object_target": s.object_target,
                "parent_target": s.parent_target,
                "toggle_target": s.toggle_target,
                "mrecep_target": "",
                "object_sliced": False,
            },
            "scene": {
                "floor_plan": self.scene.floor_plan,
                "scene_num": self.scene.scene_num,
                "random_seed": self.seed,
            },
            "turk_annotations": {
                "anns": [
                    {"task_desc": self.description, "high_descs": [], "assignment_id": "generated"}
                ]
            },
            "seed_gym": {"generator": GENERATOR_VERSION},
        }

    @property
    def trial(self) -> str:
        return f"trial_G{self.seed:012d}"

    @property
    def relpath(self) -> str:
        """``<task folder>/<trial>``, the official layout below the split folder."""
        return f"{self.spec.folder_name}-{self.scene.scene_num}/{self.trial}"

    def game_data(self, walkthrough: list[str] | None = None) -> dict:
        """The ``game.tw-pddl`` content: what ``textworld.envs.PddlEnv.load`` reads."""
        return {
            "pddl_domain": domain_text(),
            "grammar": grammar_text().replace("UNKNOWN GOAL", self.description),
            "pddl_problem": self.pddl,
            "solvable": walkthrough is not None,
            "walkthrough": walkthrough,
        }


def mangle(name: str) -> str:
    """ALFRED ids as PDDL names (what ``PlannedGameState.fix_pddl_str_chars`` does)."""
    for a, b in (
        ("-", "_minus_"),
        ("|", "_bar_"),
        ("+", "_plus_"),
        (".", "_dot_"),
        (",", "_comma_"),
    ):
        name = name.replace(a, b)
    return name


def _loc_name(loc: tuple[int, int, int, int]) -> str:
    return mangle("loc|" + "|".join(str(v) for v in loc))


def sample_problem(scene: Scene, spec: TaskSpec, seed: int) -> Problem:
    """Place every object type of the room (1..3 instances each) in receptacles that can hold it,
    with the constraints ``spec`` needs (enough targets, none already at the destination, a lamp
    standing on something), and attach the goal of ``spec.task_type``."""
    t = tables()
    rng = np.random.default_rng([seed, scene.scene_num, TASK_TYPES.index(spec.task_type)])
    by_type: dict[str, list[Receptacle]] = {}
    for r in scene.receptacles:
        by_type.setdefault(r.rtype, []).append(r)

    placements: dict[str, str] = {}
    taken: set[str] = set()

    def place(otype: str, hosts: list[Receptacle]) -> None:
        host = hosts[int(rng.integers(len(hosts)))]
        parts = host.rid.split("|")
        base = [float(p) for p in parts[1:4]]
        for _ in range(100):
            x, y, z = (b + rng.uniform(-0.5, 0.5) for b in base)
            oid = f"{otype}|{_coord(x)}|{_coord(y + 0.05)}|{_coord(z)}"
            if oid not in taken:
                break
        taken.add(oid)
        placements[oid] = host.rid

    for otype in scene.object_types:
        hosts = [r for r in scene.receptacles if otype in t.can_contain.get(r.rtype, ())]
        if otype == spec.object_target and spec.parent_target:
            hosts = [r for r in hosts if r.rtype != spec.parent_target]
        if not hosts:
            continue
        # 1 instance, sometimes 2 or 3 (more objects make every translation and step slower)
        u = rng.random()
        n = 1 + int(u < INSTANCE_ODDS[0]) + int(u < INSTANCE_ODDS[1])
        if otype == spec.object_target and spec.task_type == "pick_two_obj_and_place":
            n = max(n, 2)
        for _ in range(n):
            place(otype, hosts)
    if spec.object_target not in {p.split("|")[0] for p in placements}:
        raise ValueError(
            f"{scene.floor_plan} cannot hold a {spec.object_target} outside {spec.parent_target}"
        )

    lamp_ids: list[str] = []
    for lamp in scene.lamps:
        hosts = [r for r in scene.receptacles if r.rtype in LAMP_HOSTS] or [
            r for r in scene.receptacles if r.rtype not in t.openable
        ]
        if hosts:
            before = set(placements)
            place(lamp, hosts)
            lamp_ids += sorted(set(placements) - before)
    if spec.toggle_target and not any(i.startswith(spec.toggle_target + "|") for i in lamp_ids):
        raise ValueError(f"{scene.floor_plan} has no place for a {spec.toggle_target}")

    # The agent starts on a reachable point that no receptacle shares, so the first observation
    # is "You are in the middle of a room", as in the official games.
    occupied = {(r.loc[0], r.loc[1]) for r in scene.receptacles}
    free = [p for p in scene.points if p not in occupied] or list(scene.points)
    gx, gz = free[int(rng.integers(len(free)))]
    start = (gx, gz, int(rng.integers(4)), 30)
    if start in {r.loc for r in scene.receptacles}:
        start = (gx, gz, start[2], 15)

    goal = t.goals[spec.task_type]
    template = goal["templates"][int(rng.integers(len(goal["templates"])))]
    names = dict(
        obj=spec.object_target, recep=spec.parent_target, toggle=spec.toggle_target, mrecep=""
    )
    description = template.format(**{k: v.lower() for k, v in names.items()})
    goal_pddl = goal["pddl"].format(**names).replace("#", "-").strip()
    pddl = _write_pddl(scene, spec, seed, placements, lamp_ids, start, goal_pddl)
    return Problem(scene, spec, seed, description, pddl, start, placements)


def _write_pddl(
    scene: Scene,
    spec: TaskSpec,
    seed: int,
    placements: dict[str, str],
    lamp_ids: list[str],
    start: tuple[int, int, int, int],
    goal_pddl: str,
) -> str:
    t = tables()
    recs = {r.rid: r for r in scene.receptacles}
    otypes = sorted({o.split("|")[0] for o in placements})
    rtypes = sorted({r.rtype for r in scene.receptacles})
    if set(otypes) & set(rtypes):  # the engine would confuse them; never let it happen silently
        raise ValueError(
            f"object and receptacle types overlap: {sorted(set(otypes) & set(rtypes))}"
        )
    locations = sorted({_loc_name(r.loc) for r in scene.receptacles} | {_loc_name(start)})
    objs = sorted(placements)

    lines = [
        f"(define (problem plan_{scene.floor_plan.lower()}_{seed})",
        "    (:domain alfred)",
        "    (:objects",
        "        agent1 - agent",
    ]
    lines += [f"        {o}Type - otype" for o in otypes]
    lines += [f"        {r}Type - rtype" for r in rtypes]
    lines += [f"        {mangle(o)} - object" for o in objs]
    lines += [f"        {mangle(r)} - receptacle" for r in sorted(recs)]
    lines += [f"        {loc} - location" for loc in locations]
    lines += ["    )", "    (:init"]
    init: list[str] = [f"(atLocation agent1 {_loc_name(start)})"]
    for rid, r in sorted(recs.items()):
        init.append(f"(receptacleType {mangle(rid)} {r.rtype}Type)")
        init.append(f"(receptacleAtLocation {mangle(rid)} {_loc_name(r.loc)})")
        if r.rtype in t.openable:
            init.append(f"(openable {mangle(rid)})")
    for oid in objs:
        otype, m, host = oid.split("|")[0], mangle(oid), recs[placements[oid]]
        init.append(f"(objectType {m} {otype}Type)")
        init.append(f"(inReceptacle {m} {mangle(host.rid)})")
        init.append(f"(objectAtLocation {m} {_loc_name(host.loc)})")
        if oid in lamp_ids:
            init.append(f"(toggleable {m})")
            continue
        init.append(f"(pickupable {m})")
        for pred, kinds in (
            ("heatable", t.heatable),
            ("coolable", t.coolable),
            ("cleanable", t.cleanable),
        ):
            if otype in kinds:
                init.append(f"({pred} {m})")
        if otype in ("Bowl", "Box", "Cup", "Mug", "Plate", "Pan", "Pot"):
            init.append(f"(isReceptacleObject {m})")
    declared_o = set(otypes)
    for r in rtypes:
        for o in sorted(t.can_contain.get(r, ())):
            if o in declared_o:
                init.append(f"(canContain {r}Type {o}Type)")
    lines += [f"        {f}" for f in init]
    lines += ["    )", "", goal_pddl, ""]
    return "\n".join(lines)


def generate(scene_num: int, task_type: str, seed: int) -> Problem:
    """One problem of ``task_type`` in ``FloorPlan<scene_num>``, fully determined by ``seed``."""
    scene = load_scene(scene_num)
    specs = candidate_tasks(scene, task_type)
    if not specs:
        raise ValueError(f"FloorPlan{scene_num} ({scene.room}) supports no {task_type} task")
    rng = np.random.default_rng([seed, scene_num, 7])
    spec = specs[int(rng.integers(len(specs)))]
    return sample_problem(scene, spec, seed)


def write_game(problem: Problem, folder: Path, walkthrough: list[str]) -> Path:
    """Write the official trio into ``folder`` (created); returns the ``game.tw-pddl`` path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "initial_state.pddl").write_text(problem.pddl)
    (folder / "traj_data.json").write_text(json.dumps(problem.traj_data, indent=1, sort_keys=True))
    game = folder / "game.tw-pddl"
    game.write_text(json.dumps(problem.game_data(walkthrough), sort_keys=True))
    return game
