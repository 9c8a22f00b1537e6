"""attnsvm.data: the data sets (generators, published examples, files, your functions).

Which data sets exist, and what each reads and gives, is the registry's: attnsvm/data/sets/
(one light module per data set, naming the module that draws it).
"""
