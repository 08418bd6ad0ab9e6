"""pyust's commands, one module each, with a main(argv) that pyust.cli calls: they parse
their options (pyust.args) and call the libraries (pyust.lttng, pyust.babeltrace, ...);
no library imports them."""
