"""TPC-DS queries (written from the specification, qualification parameters) and schema,
for the plan-stability suite (planned over empty tables with injected statistics)."""
