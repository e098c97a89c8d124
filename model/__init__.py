"""The system under study: pure protocol state machines (model.core) and the SimPy actors that drive them."""

# Why a run is interpreted when no wheel said why: setup.py never compiles into the source tree, and
# Python imports from a zip (``--py-files``) only the ``.py`` files, even those of a compiled wheel.
FROM_SOURCES = "run from the sources (an editable install or a checkout), which are never compiled"
FROM_A_ZIP = "imported from a zip (--py-files), from which extension modules cannot load"


def build() -> str:
    """``"compiled"`` when the simulator's modules are mypyc extensions (setup.py), else ``"interpreted"``."""
    from model.sim import network

    return "compiled" if not network.__file__.endswith(".py") else "interpreted"


def build_description() -> str:
    """Which build this is and, for an interpreted one, why: the reason a wheel built interpreted carries
    (``model/interpreted.txt``: no C compiler, ``SHARESIM_COMPILE=0``, ...), else ``FROM_SOURCES`` or ``FROM_A_ZIP``."""
    if build() == "compiled":
        return "compiled build"
    import zipimport
    from importlib.resources import files

    note = files(__name__) / "interpreted.txt"
    if note.is_file():
        reason = note.read_text().strip()
    elif isinstance(__spec__.loader, zipimport.zipimporter):
        reason = FROM_A_ZIP
    else:
        reason = FROM_SOURCES
    return f"interpreted build, about 2x slower: {reason}"
