"""attnsvm.data: the data sets (generators, published examples, files, your functions).

Which module resolves which data set's shape or target at composition, named here so that
composing a config loads only the module of the data set in use (the others import torch):
each named module has ``resolve_dataset(ds) -> dict`` of the fields it fills.
"""

RESOLVERS = {
    "file": "attnsvm.data.userdata",
    "callable": "attnsvm.data.userdata",
    "digits": "attnsvm.data.digits",
    "maxmargin": "attnsvm.data.maxmargin",
}
# ${name:...} interpolations that sweep files use: name -> (module, function)
OMEGACONF_RESOLVERS = {"maxmargin": ("attnsvm.data.maxmargin", "maxmargin_setting")}
