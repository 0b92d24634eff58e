"""Helpers shared by the episodic bandit tests (AdaC-UCB and AdaP-UCB / AdaP-KLUCB share one skeleton)."""

import jax
import jax.numpy as jnp


def closing_state(learner, params, counts, length, played, total):
    """A state whose current episode (arm 0) closes at the next update."""
    state = learner.init(jax.random.key(0), params)
    return state._replace(
        counts=jnp.asarray(counts, jnp.int32),
        lengths=jnp.ones(2, jnp.int32),
        arm=jnp.int32(0),
        length=jnp.int32(length),
        played=jnp.int32(played),
        total=jnp.float32(total),
    )
