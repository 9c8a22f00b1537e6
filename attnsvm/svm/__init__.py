"""attnsvm.svm.solve."""
