"""dm_control's models, read at run time from the installed dm-control package (its ``suite`` directory, with the
``common`` files they include), as gymnasium's MuJoCo models are (:mod:`fastvec.mujoco_models`): fastvec ships no
model files.

An ``xml_file`` of a dm_control env is found as :func:`fastvec.mujoco_models.model_path` finds one, but a bare
name is looked up in dm_control's suite (``"cartpole.xml"``).

Some domains build their model in Python from a suite file (cartpole's poles, swimmer's ``n`` links, quadruped's and
dog's arena per task, manipulator's props, stacker's boxes, lqr's chain). Their bare names (``"swimmer6.xml"``, ...:
:data:`GENERATED`) are made here the way the suite's own functions make them, with the standard library's ElementTree
instead of lxml, and written once to a cache directory (the file named by a hash of its text) with the suite's
``common`` includes (and the dog's assets) as absolute paths.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from fastvec import mujoco_models


def suite_dir() -> Path:
    """dm_control's suite directory, found without importing dm_control (which loads its renderer)."""
    spec = importlib.util.find_spec("dm_control")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "fastvec's dm_control envs read their models from dm-control, which is not installed: "
            "pip install dm-control==1.0.52"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "suite"


def model_path(xml_file: str | os.PathLike[str], what: str = "xml_file") -> Path:
    """The model file ``xml_file`` names: a bare name in dm_control's suite, any other as
    :func:`fastvec.mujoco_models.model_path` resolves it (FileNotFoundError or ValueError naming ``what``)."""
    name = os.fspath(xml_file)
    if name in GENERATED:
        return generated_model(name)
    if name and not name.startswith((".", "/", "~")):
        name = str(suite_dir() / name)
    return mujoco_models.model_path(name, what)


def _read(name: str) -> ET.Element:
    """A suite model's root element, its includes made absolute (so the model can be written anywhere)."""
    root = ET.parse(suite_dir() / name).getroot()
    for include in root.iter("include"):
        include.set("file", str((suite_dir() / include.get("file", "")).resolve()))
    return root


def swimmer(n_bodies: int) -> ET.Element:
    """swimmer.py's _make_model(n_bodies): a head, then n_bodies - 1 segments, each with a hinge, a motor, a
    velocimeter and a gyro; the tracking cameras moved out by n_bodies / 6."""
    mjcf = _read("swimmer.xml")
    head_body = mjcf.find("./worldbody/body")
    assert head_body is not None
    actuator = ET.SubElement(mjcf, "actuator")
    sensor = ET.SubElement(mjcf, "sensor")
    parent = head_body
    for index in range(n_bodies - 1):
        child = ET.Element("body", name=f"segment_{index}")
        child.set("pos", "0 .1 0")
        ET.SubElement(child, "geom", {"class": "visual", "name": f"visual_{index}"})
        ET.SubElement(child, "geom", {"class": "inertial", "name": f"inertial_{index}"})
        child.append(ET.Element("site", name=f"site_{index}"))
        joint_limit = 360.0 / n_bodies
        child.append(ET.Element("joint", {"name": f"joint_{index}", "range": f"{-joint_limit} {joint_limit}"}))
        actuator.append(ET.Element("motor", name=f"motor_{index}", joint=f"joint_{index}"))
        sensor.append(ET.Element("velocimeter", name=f"velocimeter_{index}", site=f"site_{index}"))
        sensor.append(ET.Element("gyro", name=f"gyro_{index}", site=f"site_{index}"))
        parent.append(child)
        parent = child
    scale = n_bodies / 6.0
    for cam in mjcf.findall("./worldbody/body/camera"):
        if cam.get("mode") == "trackcom":
            cam.set("pos", " ".join(str(float(dim) * scale) for dim in cam.get("pos", "").split(" ")))
    return mjcf


def cartpole(n_poles: int) -> ET.Element:
    """cartpole.py's _make_model(n_poles): a chain of n_poles poles, each hinged 1 above the last; the floor
    lowered under them and the two cameras moved out."""
    mjcf = _read("cartpole.xml")
    parent = mjcf.find("./worldbody/body/body")  # the first pole
    assert parent is not None
    for pole_index in range(2, n_poles + 1):
        child = ET.Element("body", name=f"pole_{pole_index}", pos="0 0 1", childclass="pole")
        ET.SubElement(child, "joint", name=f"hinge_{pole_index}")
        ET.SubElement(child, "geom", name=f"pole_{pole_index}")
        parent.append(child)
        parent = child
    floor = mjcf.find("./worldbody/geom")
    assert floor is not None
    floor.set("pos", f"0 0 {1 - n_poles - 0.05}")
    cameras = mjcf.findall("./worldbody/camera")
    cameras[0].set("pos", f"0 {-1 - 2 * n_poles} 1")
    cameras[1].set("pos", f"0 {-2 * n_poles} 2")
    return mjcf


def quadruped(
    floor_size: float | None = None, terrain: bool = False, rangefinders: bool = False, walls_and_ball: bool = False
) -> ET.Element:
    """quadruped.py's make_model: the floor resized, and without what the task does not use (the walls, the ball
    and its target; the terrain; the rangefinders)."""
    mjcf = _read("quadruped.xml")
    parent_of = {child: parent for parent in mjcf.iter() for child in parent}

    def remove(tag: str, name: str) -> None:
        element = mjcf.find(f".//{tag}[@name='{name}']")
        if element is None:
            raise ValueError(f"dm_control's quadruped.xml has no {tag} named {name!r}")
        parent_of[element].remove(element)

    if floor_size is not None:
        floor = mjcf.find(".//geom[@name='floor']")
        assert floor is not None
        floor.set("size", f"{floor_size} {floor_size} .5")
    if not walls_and_ball:
        for wall in ("wall_px", "wall_py", "wall_nx", "wall_ny"):
            remove("geom", wall)
        remove("body", "ball")
        remove("site", "target")
    if not terrain:
        remove("geom", "terrain")
    if not rangefinders:
        for rangefinder in mjcf.findall(".//rangefinder"):
            parent_of[rangefinder].remove(rangefinder)
    return mjcf


def manipulator(use_peg: bool, insert: bool) -> ET.Element:
    """manipulator.py's make_model(use_peg, insert): without the props the task does not use (of the ball, its
    target and the cup; the peg, its target and the slot)."""
    mjcf = _read("manipulator.xml")
    parent_of = {child: parent for parent in mjcf.iter() for child in parent}
    required = ["peg", "target_peg"] if use_peg else ["ball", "target_ball"]
    if insert:
        required.append("slot" if use_peg else "cup")
    for prop in sorted({"ball", "target_ball", "cup", "peg", "target_peg", "slot"}.difference(required)):
        body = mjcf.find(f".//body[@name='{prop}']")
        if body is None:
            raise ValueError(f"dm_control's manipulator.xml has no body named {prop!r}")
        parent_of[body].remove(body)
    return mjcf


def stacker(n_boxes: int) -> ET.Element:
    """stacker.py's make_model(n_boxes): without the boxes after the first n_boxes of its 4."""
    mjcf = _read("stacker.xml")
    parent_of = {child: parent for parent in mjcf.iter() for child in parent}
    for b in range(n_boxes, 4):
        box = mjcf.find(f".//body[@name='box{b}']")
        if box is None:
            raise ValueError(f"dm_control's stacker.xml has no body named 'box{b}'")
        parent_of[box].remove(box)
    return mjcf


def lqr(n_bodies: int, n_actuators: int) -> ET.Element:
    """lqr.py's _make_model(n_bodies, n_actuators): a chain of bodies on springs, the first n_actuators driven.
    The suite draws each joint's stiffness and damping from the environment's RandomState; here they are
    placeholders, which each env overwrites with its own draws when it is seeded (src/envs/dm_control/lqr.hpp)."""
    mjcf = _read("lqr.xml")
    parent = mjcf.find("./worldbody")
    assert parent is not None
    actuator = ET.SubElement(mjcf, "actuator")
    tendon = ET.SubElement(mjcf, "tendon")
    for body in range(n_bodies):
        child = ET.Element("body", name=f"body_{body}")
        child.set("pos", ".25 0 0")
        ET.SubElement(child, "joint", {"name": f"joint_{body}", "stiffness": "20", "damping": "0"})
        child.append(ET.Element("geom", name=f"geom_{body}"))
        child.append(ET.Element("site", name=f"site_{body}"))
        if body == 0:
            child.set("pos", ".25 0 .1")
        if body < n_actuators:
            actuator.append(ET.Element("motor", name=f"motor_{body}", joint=f"joint_{body}"))
        if body < n_bodies - 1:
            spatial = ET.SubElement(tendon, "spatial", name=f"tendon_{body}")
            spatial.append(ET.Element("site", site=f"site_{body}"))
            spatial.append(ET.Element("site", site=f"site_{body + 1}"))
        parent.append(child)
        parent = child
    return mjcf


def dog(floor_size: float, remove_ball: bool) -> ET.Element:
    """dog.py's make_model(floor_size, remove_ball): the floor resized; for stand and the move tasks without the
    ball, its target, the two cameras on them and the walls. The meshes and textures (dm_control hands them to
    MuJoCo as assets) are read from the suite's dog_assets directory, made absolute."""
    mjcf = _read("dog.xml")
    parent_of = {child: parent for parent in mjcf.iter() for child in parent}

    def remove(tag: str, name: str) -> None:
        element = mjcf.find(f".//{tag}[@name='{name}']")
        if element is None:
            raise ValueError(f"dm_control's dog.xml has no {tag} named {name!r}")
        parent_of[element].remove(element)

    compiler = mjcf.find("./compiler")
    assert compiler is not None
    for directory in ("meshdir", "texturedir"):
        compiler.set(directory, str((suite_dir() / "dog_assets").resolve()) + os.sep)
    floor = mjcf.find(".//geom[@name='floor']")
    assert floor is not None
    floor.set("size", f"{floor_size} {floor_size} .1")
    if remove_ball:
        remove("body", "ball")
        remove("geom", "target")
        remove("camera", "ball")
        remove("camera", "head")
        for wall in ("px", "nx", "py", "ny"):
            remove("geom", f"wall_{wall}")
    return mjcf


# The generated models' names (an xml_file's bare name) and how each is made.
GENERATED: dict[str, Callable[[], ET.Element]] = {
    "swimmer6.xml": lambda: swimmer(6),
    "swimmer15.xml": lambda: swimmer(15),
    "cartpole_two_poles.xml": lambda: cartpole(2),
    "cartpole_three_poles.xml": lambda: cartpole(3),
    # quadruped.py's walk (floor_size = time limit * speed), run, escape and fetch
    "quadruped_walk.xml": lambda: quadruped(floor_size=20 * 0.5),
    "quadruped_run.xml": lambda: quadruped(floor_size=20 * 5),
    "quadruped_escape.xml": lambda: quadruped(floor_size=40, terrain=True, rangefinders=True),
    "quadruped_fetch.xml": lambda: quadruped(walls_and_ball=True),
    "manipulator_bring_ball.xml": lambda: manipulator(use_peg=False, insert=False),
    "manipulator_bring_peg.xml": lambda: manipulator(use_peg=True, insert=False),
    "manipulator_insert_ball.xml": lambda: manipulator(use_peg=False, insert=True),
    "manipulator_insert_peg.xml": lambda: manipulator(use_peg=True, insert=True),
    "stacker_stack2.xml": lambda: stacker(2),
    "stacker_stack4.xml": lambda: stacker(4),
    "lqr_2_1.xml": lambda: lqr(2, 1),
    "lqr_6_2.xml": lambda: lqr(6, 2),
    # dog.py's stand and walk (floor_size = speed * time limit: 1 * 15), trot (3 * 15), run (9 * 15) and fetch
    "dog_walk.xml": lambda: dog(floor_size=1 * 15, remove_ball=True),
    "dog_trot.xml": lambda: dog(floor_size=3 * 15, remove_ball=True),
    "dog_run.xml": lambda: dog(floor_size=9 * 15, remove_ball=True),
    "dog_fetch.xml": lambda: dog(floor_size=10, remove_ball=False),
}


def generated_model(name: str) -> Path:
    """The file of the generated model ``name`` (a key of :data:`GENERATED`), written on first use to
    ``$XDG_CACHE_HOME/fastvec/dm_control`` (else the temporary directory) under a hash of its text: a file of
    that name is that model, so concurrent makers write the same bytes and a changed suite makes a new file."""
    text = ET.tostring(GENERATED[name](), encoding="unicode").encode()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for base in (Path(cache), Path(tempfile.gettempdir())):
        directory = base / "fastvec" / "dm_control"
        path = directory / f"{Path(name).stem}-{hashlib.sha256(text).hexdigest()[:16]}.xml"
        if path.is_file():
            return path
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=directory, suffix=".tmp", delete=False) as f:
                f.write(text)
            os.replace(f.name, path)
            return path
        except OSError:
            continue
    raise OSError(f"fastvec could not write the dm_control model {name} to {cache} or {tempfile.gettempdir()}")
