"""Names of the pluggable pieces, in a module that imports nothing (the
command line builds its choices from them without loading the fitting code)."""

__all__ = ["REGRESSORS", "DERIVATIVE_METHODS", "LV_FORMS"]

#: string shortcuts of the regressors (see :mod:`.regression`)
REGRESSORS = ("stlsq", "ols", "lasso", "lasso_cv")
#: string shortcuts of the formulations (see :func:`.inputs.as_formulation`)
DERIVATIVE_METHODS = ("weak", "forward", "central", "savgol", "flowmap")
#: the forms of :class:`~fitting.ode.LotkaVolterra` (see :mod:`.lotka_volterra`)
LV_FORMS = ("general", "classic", "logistic")
