"""Every public name of the package has a docstring (help() and editors show them), and the
type stubs ship with it."""

import inspect
import os

import sluice


def test_every_public_name_and_member_is_documented():
    missing = []
    for name in sluice.__all__:
        obj = getattr(sluice, name)
        if isinstance(obj, int):
            continue  # DONE: documented in the stubs and in Block's docs
        if not (obj.__doc__ or "").strip():
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member, value in vars(obj).items():
                if member.startswith("_") or not (callable(value) or isinstance(value, (property,)) or inspect.isdatadescriptor(value)):
                    continue
                if not (getattr(value, "__doc__", None) or "").strip():
                    missing.append(f"{name}.{member}")
    assert not missing, f"undocumented: {missing}"


def test_the_stubs_and_the_typed_marker_are_installed():
    here = os.path.dirname(sluice.__file__)
    assert os.path.exists(os.path.join(here, "_sluice.pyi"))
    assert os.path.exists(os.path.join(here, "py.typed"))
