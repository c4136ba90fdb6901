"""A ferro backend over ``array_api_strict``, the Array API standard's reference namespace."""
