-- Plans (issue 33): what a tenant on a plan gets, as versioned records. A version is never changed or
-- removed: an update is the next version with the whole new body, so what a tenant was given stays
-- readable. The database refuses UPDATE, DELETE and TRUNCATE, as it does for the audit log.
CREATE TABLE plans (
  name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$'),
  version     integer NOT NULL CHECK (version >= 1),
  body        jsonb NOT NULL CHECK (jsonb_typeof(body) = 'object'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- The authenticated identity that made this version (never a body field).
  created_by  text NOT NULL CHECK (length(created_by) BETWEEN 1 AND 100),
  reason      text CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 500),
  PRIMARY KEY (name, version)
);

CREATE FUNCTION plans_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'plan versions are immutable (% refused): an update is a new version', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER plans_no_update_delete BEFORE UPDATE OR DELETE ON plans
  FOR EACH ROW EXECUTE FUNCTION plans_refuse_change();
CREATE TRIGGER plans_no_truncate BEFORE TRUNCATE ON plans
  FOR EACH STATEMENT EXECUTE FUNCTION plans_refuse_change();

-- The plan version a tenant is on: set by onboarding with a plan and by the plan's rollout (both to
-- come); NULL while it is on none. Both or neither, and always a version that exists.
ALTER TABLE tenants
  ADD COLUMN plan_name text,
  ADD COLUMN plan_version integer,
  ADD CONSTRAINT tenants_plan_both CHECK ((plan_name IS NULL) = (plan_version IS NULL)),
  ADD CONSTRAINT tenants_plan_exists FOREIGN KEY (plan_name, plan_version) REFERENCES plans (name, version);
CREATE INDEX tenants_plan_idx ON tenants (plan_name, plan_version) WHERE plan_name IS NOT NULL;
