"""Where the real tool stops: the `fails_in` of a finding and of a rule.

LOAD is reading the file (hjson / json.load / yaml.safe_load, duplicate keys, removed blocks);
PARSE is `DeepSpeedConfig(...)` (pydantic sections, loose getters, batch arithmetic); INITIALIZE is
`deepspeed.initialize`, the engine, ZeRO, the HF Trainer or Accelerate's prepare(); LAUNCH is
`accelerate launch` before any process starts; STEP is the first training step (forward, backward,
optimizer step), where DeepSpeed first computes with values it stored unread. SILENT (None) means
nothing fails: the run goes on, not as written.

STEP comes last in PHASES: whichever tool started the run, `accelerate launch` included (which acts
before any process reads its config), the first training step is the last thing the run reaches.
"""

from __future__ import annotations

LOAD = "load"
PARSE = "parse"
INITIALIZE = "initialize"
LAUNCH = "launch"
STEP = "step"
SILENT = None
PHASES = (LOAD, PARSE, INITIALIZE, LAUNCH, STEP)

# How the rule docs (docs/rules.md, `dsconfig rule`) name each phase.
DESCRIBED = {
    LOAD: "load (reading the file)",
    PARSE: "parse (DeepSpeedConfig)",
    INITIALIZE: "initialize (deepspeed.initialize, the Trainer, prepare())",
    LAUNCH: "launch (accelerate launch)",
    STEP: "step (the first training step: forward, backward, optimizer step)",
    SILENT: "nothing fails (silently wrong)",
}
