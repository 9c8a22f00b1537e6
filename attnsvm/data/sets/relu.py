"""dataset=relu: the published ReLU-head generator (V, then X, Y, Z); it gives head=relu its V
and skips the seeds whose labels are all +1, as the notebook does."""

from attnsvm.data.data_set import DataSet

DATA_SET = DataSet(
    instances="attnsvm.data.generators:relu_instances",
    accepted_seeds="attnsvm.data.generators:relu_accepted_seeds",
    values=True,
    doc=__doc__,
)
