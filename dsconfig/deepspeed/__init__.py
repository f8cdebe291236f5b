"""Everything about DeepSpeed's own ds_config.json: schema, parsing emulation, rules."""
