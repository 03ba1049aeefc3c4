"""make bench's parts (one module each), what they share (runner) and the page (page)."""
