"""Timer keeps laps like d2l's (each at least its sleep, at most the time around it); Accumulator sums."""
import itertools
import time

import pytest
import torch

import d2lite


def test_timer_measures_sleeps_and_keeps_every_lap():
    timer = d2lite.Timer()
    laps = [0.05, 0.1]
    for seconds in laps:
        before = time.perf_counter()
        timer.start()
        time.sleep(seconds)
        last = timer.stop()
        around = time.perf_counter() - before  # the lap, measured independently from outside
        assert seconds <= last <= around, f"a {seconds} s sleep measured {last:.3f} s, {around:.3f} s around it"
    assert len(timer.times) == 2 and timer.times[-1] == last
    assert timer.sum() == pytest.approx(sum(timer.times))
    assert timer.avg() == pytest.approx(timer.sum() / 2)
    assert timer.cumsum() == pytest.approx(list(itertools.accumulate(timer.times)))
    assert isinstance(timer.cumsum(), list)


def test_timer_starts_when_created_like_d2l():
    timer = d2lite.Timer()
    time.sleep(0.02)
    assert timer.stop() >= 0.02


def test_timer_as_context_manager_records_one_lap():
    with d2lite.Timer(sync_cuda=True) as timer:  # sync_cuda is a no-op without CUDA
        time.sleep(0.01)
    assert len(timer.times) == 1 and timer.times[0] >= 0.01


def test_avg_without_laps_is_a_clear_error():
    with pytest.raises(ValueError, match="stop"):
        d2lite.Timer().avg()


def test_accumulator_sums_floats_and_tensors():
    metric = d2lite.Accumulator(3)
    metric.add(1, 2.5, torch.tensor(3))
    metric.add(torch.tensor(0.5), 0, 1)
    assert metric[0] == 1.5 and metric[1] == 2.5 and metric[2] == 4.0
    assert metric[0:2] == [1.5, 2.5] and len(metric) == 3
    metric.reset()
    assert metric.data == [0.0, 0.0, 0.0]


def test_accumulator_rejects_the_wrong_number_of_values():
    metric = d2lite.Accumulator(2)
    with pytest.raises(ValueError, match="expected 2 values, got 3"):
        metric.add(1, 2, 3)
    with pytest.raises(ValueError, match="n >= 1"):
        d2lite.Accumulator(0)
