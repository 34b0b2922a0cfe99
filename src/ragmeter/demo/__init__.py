"""``ragmeter demo``: the chain on bundled data, section by section."""
