"""The registry of the zCDP-bandit reproductions' settings, shared by ``zcdp_bandits`` and ``zcdp_bandits_linear``.

``zcdp_bandits`` registers ``"finite"`` and runs any registered setting (``reproduce``);
``zcdp_bandits_linear`` registers ``"linear"`` and ``"contextual"``. Both take the registry
and its types from here: ``zcdp_bandits`` imports ``zcdp_bandits_linear`` only to have its
settings registered, and ``zcdp_bandits_linear`` never imports ``zcdp_bandits``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from jaxpriv._base import PRNGKey

__all__ = ["SETTINGS", "Scale", "Setting", "SettingRuns", "Simulator", "register_setting"]


class Scale(NamedTuple):
    """The grids of one scale of a setting.

    Attributes:
      rhos: the ρ values of the left panel (regret gap against ρ).
      horizons: the horizons ``T`` of the left panel's curves.
      pop_rhos: the ρ values of the right panel's curves (price of privacy against t).
      pop_horizon: the right panel's largest ``t``.
      runs: the number of seeds (shared by the private and the non-private runs).
    """

    rhos: tuple[float, ...]
    horizons: tuple[int, ...]
    pop_rhos: tuple[float, ...]
    pop_horizon: int
    runs: int


class SettingRuns(NamedTuple):
    """What a setting's simulator returns (NumPy arrays).

    Attributes:
      steps: ``[m]``, the checkpoints ``t``.
      private: ``[G, S, m]``, cumulative pseudo-regret of the private algorithm, one row per ρ.
      nonprivate: ``[S, m]``, cumulative pseudo-regret of the non-private counterpart (same seeds).
    """

    steps: np.ndarray
    private: np.ndarray
    nonprivate: np.ndarray


#: ``simulate(key, rhos[G], horizon, checkpoints, seeds) -> SettingRuns``.
Simulator = Callable[[PRNGKey, np.ndarray, int, tuple[int, ...], int], SettingRuns]


class Setting(NamedTuple):
    """One of the paper's experimental settings.

    Attributes:
      name: the registry key (``"finite"``, ``"linear"``, ``"contextual"``).
      title: a figure title.
      private_name: the private algorithm's name (legend / JSON).
      nonprivate_name: the non-private counterpart's name.
      full: the paper's scale (Section VII; docs/algorithms/zcdp_bandits.md, 'Decoding choices').
      reduced: a scale that runs on a 2-core CPU in a minute or two.
      simulate: the simulator (see ``Simulator``).
      config: JSON-serialisable constants of the setting (means, β, δ, ...).
    """

    name: str
    title: str
    private_name: str
    nonprivate_name: str
    full: Scale
    reduced: Scale
    simulate: Simulator
    config: dict[str, Any]


SETTINGS: dict[str, Setting] = {}


def register_setting(setting: Setting, replace: bool = False) -> Setting:
    """Add a setting to the registry used by ``reproduce``; returns it."""
    if setting.name in SETTINGS and not replace:
        raise ValueError(f"setting {setting.name!r} is already registered")
    SETTINGS[setting.name] = setting
    return setting
