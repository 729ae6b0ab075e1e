-- Weir analyzes capture partitions as they fill (src/db/table-maintenance.ts).
-- Headers and bodies are no part of any estimate the planner makes for
-- Weir's queries, and they are the costliest columns to sample: without
-- them a 100,000-capture partition analyzes in a third of the time, and on
-- PGlite every other query waits for an analyze. A statistics target of 0
-- skips them. This reaches the partitions that exist (ALTER recurses); new
-- day partitions get the same at creation (src/requests/partitions.ts).
alter table captured_requests alter column headers set statistics 0, alter column body set statistics 0;
