"""The weighted multi-task loss of Heinisch et al. 2022 (Eq. 1 and 2)::

    L_i = w_i * (alpha * L_val,i * L_nov,i + beta * L_val,i + gamma * L_nov,i)

``L_val,i`` / ``L_nov,i`` are the squared errors (the per-instance MSE) between the sigmoid output and the target
(1 valid / novel, 0 not, 0.5 a novelty tie). Where a target is unknown (``NaN`` in the target tensor, ``None`` in a
row) that task's loss is set to 0 -- so the product term vanishes too and the instance teaches only the other task
("to avoid random model weight adjustments"). ``alpha = beta = gamma = 0.5`` by default (the paper's setting).
The batch loss is the mean of ``L_i`` over the instances of the batch.

Class weighting (not in the paper; the trainer's default ``class_weighting="balanced"``): ``weight_validity`` /
``weight_novelty`` scale ``L_val,i`` / ``L_nov,i`` per instance (:func:`class_weights`: ``n / (2 n_class)`` of the
instance's class in its task), so a rare class (novel conclusions: about a fifth of the shared task's training set)
pulls as hard as the frequent one and the head does not settle on always predicting the frequent class.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

ALPHA = BETA = GAMMA = 0.5


def targets_tensor(values: Sequence[float | None], *, device=None) -> torch.Tensor:
    """A float tensor of targets with ``NaN`` for unknown (``None``)."""
    return torch.tensor([math.nan if v is None else float(v) for v in values], dtype=torch.float32, device=device)


def class_weights(targets: Sequence[float | None]) -> list[float]:
    """Per instance ``n / (2 n_c)`` of its class ``c`` (target 1 / 0) among the known binary targets of one task;
    1 for an unknown target, a tie (0.5) or when a class is absent (nothing to balance)."""
    pos = sum(1 for t in targets if t is not None and float(t) == 1.0)
    neg = sum(1 for t in targets if t is not None and float(t) == 0.0)
    if not pos or not neg:
        return [1.0] * len(targets)
    n = pos + neg
    by_class = {1.0: n / (2 * pos), 0.0: n / (2 * neg)}
    return [by_class.get(float(t), 1.0) if t is not None else 1.0 for t in targets]


def per_instance_loss(
    pred_validity: torch.Tensor,
    pred_novelty: torch.Tensor,
    target_validity: torch.Tensor,
    target_novelty: torch.Tensor,
    weight: torch.Tensor | None = None,
    *,
    alpha: float = ALPHA,
    beta: float = BETA,
    gamma: float = GAMMA,
    weight_validity: torch.Tensor | None = None,
    weight_novelty: torch.Tensor | None = None,
) -> torch.Tensor:
    """``L_i`` for every instance (shape ``[batch]``); targets use ``NaN`` for unknown; ``weight_validity`` /
    ``weight_novelty`` (class weights) scale the task losses."""
    known_v = ~torch.isnan(target_validity)
    known_n = ~torch.isnan(target_novelty)
    zero = torch.zeros_like(pred_validity)
    l_val = torch.where(known_v, (pred_validity - torch.nan_to_num(target_validity)) ** 2, zero)
    l_nov = torch.where(known_n, (pred_novelty - torch.nan_to_num(target_novelty)) ** 2, zero)
    if weight_validity is not None:
        l_val = l_val * weight_validity.to(l_val.dtype)
    if weight_novelty is not None:
        l_nov = l_nov * weight_novelty.to(l_nov.dtype)
    loss = alpha * l_val * l_nov + beta * l_val + gamma * l_nov
    if weight is not None:
        loss = loss * weight.to(loss.dtype)
    return loss


def valnov_loss(
    pred_validity: torch.Tensor,
    pred_novelty: torch.Tensor,
    target_validity: torch.Tensor,
    target_novelty: torch.Tensor,
    weight: torch.Tensor | None = None,
    *,
    alpha: float = ALPHA,
    beta: float = BETA,
    gamma: float = GAMMA,
    weight_validity: torch.Tensor | None = None,
    weight_novelty: torch.Tensor | None = None,
) -> torch.Tensor:
    """The batch loss: the mean of :func:`per_instance_loss` (Eq. 2)."""
    return per_instance_loss(
        pred_validity,
        pred_novelty,
        target_validity,
        target_novelty,
        weight,
        alpha=alpha,
        beta=beta,
        gamma=gamma,
        weight_validity=weight_validity,
        weight_novelty=weight_novelty,
    ).mean()
