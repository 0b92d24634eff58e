"""What a user runs: TOML studies and the shipped study files (the demo, the papers' reproductions), the audit table.

The CLI and the notebooks call these modules; the library (mechanisms, learners,
environments, the engine) never imports them.
"""
