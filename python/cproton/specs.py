"""Peak device throughput used by viewers to turn metrics into utilisation,
as in Proton's ``triton.profiler.specs`` (same functions, same numbers).

Units: ``clock_rate`` and ``memory_clock_rate`` in kHz, ``bus_width`` in
bits, ``width`` the operand width in bits; results in FLOP/s and B/s.
"""


def _dense_rate(peak_8bit: float):
    """A device with a fixed 8-bit peak (FLOP/s), halved per width doubling."""
    return lambda width, **kwargs: peak_8bit / (width / 8)


def _hopper(width, num_sms, clock_rate, **kwargs):
    # H100 SXM: 1513 dense 8-bit TFLOP/s at 114 SMs and 1755 MHz; scale by both.
    return (num_sms / 114) * (clock_rate / 1755e3) * 1513e12 / (width / 8)


def _blackwell(width, num_sms, clock_rate, **kwargs):
    # 16384 8-bit FLOP per SM per clock.
    return num_sms * 16384 * (clock_rate * 1e3) / (width / 8)


flops_by_device = {
    "CUDA": {
        "80": _dense_rate(624e12),
        "89": _dense_rate(330.3e12),
        "90": _hopper,
        "100": _blackwell,
    }
}

amd_bps_by_arch = {"gfx90a": 3.2e12, "gfx942": 5.3e12, "gfx950": 8.0e12}

# 8-bit matrix FLOP per clock per CU (gfx90a: INT8, it has no FP8).
amd_fp8_flops_by_arch = {"gfx90a": 1024, "gfx942": 4096, "gfx950": 8192}


def max_flops(device_type, arch, width, num_sms, clock_rate):
    """
    Peak FLOP/s of a device for operands of `width` bits.

    Args:
        device_type (str): "CUDA" or "HIP".
        arch (str): "80", "89", "90", "100" (CUDA) or "gfx90a", "gfx942", "gfx950" (HIP).
        width (int): operand width in bits.
        num_sms (int): streaming multiprocessors (compute units).
        clock_rate (float): SM clock in kHz.

    Raises:
        ValueError: unknown device type or architecture.
    """
    if device_type == "HIP":
        if arch not in amd_fp8_flops_by_arch:
            raise ValueError(f"Unsupported architecture: {arch}")
        return amd_fp8_flops_by_arch[arch] * num_sms * clock_rate * 1e3 / (width / 8)
    if device_type not in flops_by_device:
        raise ValueError(f"Unsupported device type: {device_type}")
    table = flops_by_device[device_type]
    if arch not in table:
        raise ValueError(f"Unsupported architecture: {arch}")
    return table[arch](width, num_sms=num_sms, clock_rate=clock_rate)


def max_bps(device_type, arch, bus_width, memory_clock_rate):
    """
    Peak memory bandwidth in bytes per second.

    Args:
        device_type (str): "CUDA" or "HIP".
        arch (str): the architecture (used for HIP).
        bus_width (int): memory bus width in bits.
        memory_clock_rate (float): memory clock in kHz (double data rate).
    """
    if device_type == "CUDA":
        return 2 * bus_width * memory_clock_rate * 1e3 / 8
    if device_type == "HIP" and arch in amd_bps_by_arch:
        return amd_bps_by_arch[arch]
    raise ValueError(f"Unsupported device: {device_type} {arch}")
