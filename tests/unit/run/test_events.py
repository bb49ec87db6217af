"""run/events.py: the GPU board the timing child names, spelt as nvidia-smi spells it."""

from kernel_opt.run.events import board_uuid


def test_a_boards_uuid_reads_as_nvidia_smi_writes_it():
    assert board_uuid("5f1c2d3e-0000-1111-2222-333344445555") == "GPU-5f1c2d3e-0000-1111-2222-333344445555"
    assert board_uuid("GPU-5f1c2d3e-0000-1111-2222-333344445555") == "GPU-5f1c2d3e-0000-1111-2222-333344445555"
    assert board_uuid(None) is None and board_uuid("") is None
