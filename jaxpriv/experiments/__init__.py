"""What a user runs: the demo, the papers' reproductions, window privacy and TOML studies.

The CLI and the notebooks call these modules; the library (mechanisms, learners,
environments, the engine) never imports them.
"""
