"""dataset=relu: the published ReLU-head generator (V, then X, Y, Z); it gives head=relu its V
and skips the seeds whose labels are all +1, as the notebook does."""

INSTANCES = "attnsvm.data.generators:relu_instances"
ACCEPTED_SEEDS = "attnsvm.data.generators:relu_accepted_seeds"
VALUES = True
