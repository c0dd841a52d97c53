"""Which configuration is best on this machine? Workloads, isolated trials and sweeps, their
records and spread, whether the machine was quiet enough to trust them, the cost model, and
sweeps across machines."""
