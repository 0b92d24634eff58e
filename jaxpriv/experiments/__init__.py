"""What a user runs: experiments built on the library (the CLI calls these; the library never imports them)."""
