"""Issue 24.18: the C mode parser (the sessions', the hook's and the
injection's) and Python's cproton.mode.parse_instrumentation_mode accept and
refuse the same mode strings, and what Python builds is the mode C parsed.
Hand-picked strings plus a generated set of a few thousand: keys, values in
every spelling (Proton's names, Python's "TYPE.MEMBER", other case, the
wrong type's prefix, blanks, signs), empty fields, keys and values."""
import random

import pytest

from cproton import _cproton
from cproton.mode import parse_instrumentation_mode

DEFAULTS = {"metric_type": "cycle", "sampling_strategy": "none", "sampling_options": "",
            "granularity": "warp", "buffer_strategy": "circular", "buffer_type": "shared",
            "buffer_size": "0", "optimizations": ""}

VALUES = {
    "metric_type": ["cycle", "CYCLE", "METRIC_TYPE.CYCLE", "metric_type.cycle", "clock64", "globaltimer",
                    "GRANULARITY.CYCLE", ""],
    "granularity": ["warp", "warp_group", "warpgroup", "WARP_2", "GRANULARITY.WARP_GROUP_8", "cta", "x",
                    "BUFFER_TYPE.WARP", " warp", "warp ", ".warp", "GRANULARITY.", ""],
    "buffer_type": ["shared", "global", "BUFFER_TYPE.GLOBAL", "Global", "local", ""],
    "buffer_strategy": ["circular", "flush", "BUFFER_STRATEGY.FLUSH", "FLUSH", "ring", ""],
    "sampling_strategy": ["none", "selective", "SAMPLING_STRATEGY.SELECTIVE", "all", ""],
    "sampling_options": ["", "0", "0,4", "4,0", "0,,4", "0,", ",0", "31", "32", "-1", "+1", " 1", "a"],
    "buffer_size": ["0", "4096", "+8", "-1", "1_0", "0x10", " 8", "8 ", "1073741824", "1073741825",
                    "99999999999999999999", ""],
    "optimizations": ["", "clock32", "time_shift,clock32", "clock32, time_shift", " clock32 ", "CLOCK32",
                      "clock32,", ",clock32", "clock32,,time_shift", "sched_stores,sched_barriers", "nope"],
    "reduce": ["kernel", "device", "host", "KERNEL", "", "auto"],
}
EXTRA_KEYS = ["", "nope", "Granularity", " granularity"]
NAMES = ["default", "mma", "", "Default", "nope", "default "]

FIXED = ["", "default", "mma", ":", "::::", "default:", "default::granularity=warp", ":granularity=warp",
         "default:=", "default:=warp", "default:granularity", "default:granularity=", "default:buffer_size=",
         "default:metric_type=", "default:optimizations=", "default:sampling_options=", "default:reduce=",
         "default:granularity=warp:", "default:granularity=warp::buffer_size=8", "pcsampling",
         "default:granularity=warp_group:buffer_size=4096", "mma:optimizations=clock32:buffer_type=global",
         "default:metric_type=METRIC_TYPE.CYCLE:sampling_strategy=SAMPLING_STRATEGY.NONE:sampling_options=:"
         "granularity=GRANULARITY.WARP:buffer_strategy=BUFFER_STRATEGY.FLUSH:buffer_type=BUFFER_TYPE.SHARED:"
         "buffer_size=0:optimizations=", "default\0:granularity=warp", "default:granularity=warp\0x",
         "d" * 2000, "default:granularity=warp_group:granularity=cta"]


def generated(n=4000, seed=24):
    rng = random.Random(seed)
    keys = list(VALUES)
    out = []
    for _ in range(n):
        fields = [rng.choice(NAMES) if rng.random() < 0.3 else rng.choice(NAMES[:2])]
        for _ in range(rng.randrange(0, 5)):
            r = rng.random()
            if r < 0.05:
                fields.append("")  # an empty field
            elif r < 0.1:
                fields.append(rng.choice(EXTRA_KEYS) + "=" + rng.choice(VALUES["granularity"]))
            elif r < 0.13:
                fields.append(rng.choice(keys))  # no '='
            else:
                key = rng.choice(keys)
                fields.append(key + "=" + rng.choice(VALUES[key]))
        out.append(":".join(fields))
    return out


def c_accepts(text):
    try:
        _cproton.instr_mode_normalize(text)
        return True
    except ValueError:
        return False


def c_settings(text):
    """The settings C parsed, defaults filled in (the last of a repeated key
    wins), without reduce (the runtime's key, not a mode field)."""
    parts = _cproton.instr_mode_normalize(text).split(":")
    settings = dict(DEFAULTS, mode=parts[0])
    for field in parts[1:]:
        key, value = field.split("=", 1)
        settings[key] = value
    settings.pop("reduce", None)
    return settings


@pytest.mark.parametrize("texts", [FIXED, generated()], ids=["fixed", "generated"])
def test_c_and_python_mode_parsers_agree(texts):
    accepted = refused = 0
    for text in texts:
        in_c = c_accepts(text)
        try:
            mode = parse_instrumentation_mode(text)
        except ValueError:
            mode = None
        assert in_c == (mode is not None), f"C {'accepts' if in_c else 'refuses'} {text!r}, Python not"
        if mode is None:
            refused += 1
            continue
        accepted += 1
        # Python's object is the mode C parsed: its str() reads back the same
        assert c_settings(str(mode)) == c_settings(text), text
    assert accepted >= 5 and refused >= 5, (accepted, refused)  # both sides exercised


def test_empty_values_are_refused_with_the_key():
    for key in ("metric_type", "granularity", "buffer_type", "buffer_strategy", "sampling_strategy",
                "buffer_size", "reduce"):
        with pytest.raises(ValueError, match=key):
            parse_instrumentation_mode(f"default:{key}=")
    for text in ("default:", "default::granularity=warp", "default:=warp"):
        with pytest.raises(ValueError):
            parse_instrumentation_mode(text)
    # Proton's str(mode) writes these empty for "none"
    mode = parse_instrumentation_mode("mma:sampling_options=:optimizations=")
    assert mode.name == "mma" and mode.optimizations == [] and mode.sampling_options == ""


def test_hook_reads_time_shift_as_c_does():
    """The hook's own look at optimizations (reduce=kernel stores no records,
    which time_shift needs) sees what the C parser accepted: blanks, case."""
    from cproton.hooks.instrumentation import check_mode
    for text in ("default:reduce=kernel:optimizations= time_shift", "default:reduce=kernel:optimizations=TIME_SHIFT",
                 "default:reduce=kernel:optimizations=clock32 , Time_Shift"):
        with pytest.raises(ValueError, match="time_shift"):
            check_mode(text)
    assert check_mode("default:reduce=kernel:optimizations=clock32") == "kernel"
