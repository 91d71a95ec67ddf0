"""Algorithm providers: importing :mod:`algorithmprovider.defaults` registers the 1.9 built-ins."""
