"""Fixtures shared by the engine's tests."""

import threading

import pytest

from annotation.signals import assignment_submitted


@pytest.fixture
def signalled():
    """Assignment ids that ``assignment_submitted`` was sent for (from any thread)."""
    sent, lock = [], threading.Lock()

    def receiver(sender, assignment, **kwargs):
        with lock:
            sent.append(assignment.pk)

    assignment_submitted.connect(receiver, weak=False, dispatch_uid="tests_signalled_receiver")
    yield sent
    assignment_submitted.disconnect(dispatch_uid="tests_signalled_receiver")
