import inspect

import stepgraph
from stepgraph import (
    engine,
    exceptions,
    executor,
    guards,
    journal,
    mcp_server,
    planner,
    tools,
    units,
    verifiers,
)


def _isort_order(name):
    """Constants, then classes, then functions: the order ruff's RUF022 keeps."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_lists_exactly_the_public_names():
    for module in (
        stepgraph,
        engine,
        executor,
        journal,
        tools,
        verifiers,
        planner,
        guards,
        mcp_server,
        units,
    ):
        # dir(), not vars(): the package root imports its names on first use
        public = {name for name in dir(module) if not name.startswith("_")}
        submodules = {name for name in public if inspect.ismodule(getattr(module, name))}
        assert set(module.__all__) == public - submodules - {"annotations"}, module.__name__
        assert module.__all__ == sorted(module.__all__, key=_isort_order), module.__name__


def test_every_exception_is_exported_from_the_package_root():
    errors = {
        name
        for name, value in vars(exceptions).items()
        if inspect.isclass(value) and issubclass(value, Exception)
    }
    assert errors <= set(stepgraph.__all__)
    assert all(issubclass(getattr(stepgraph, name), stepgraph.StepgraphError) for name in errors)


def test_errors_survive_pickling_with_their_context():
    """Errors come back from Dask workers pickled: the message and the fields must survive."""
    import pickle

    error = stepgraph.ToolArgumentError("bad argument", tool="unit_convert")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is stepgraph.ToolArgumentError
    assert (str(copy), copy.tool) == ("bad argument", "unit_convert")
