-- The platform's request budget, shared by every process that calls it (workers and gateways, however many):
-- each request takes the next free instant, `next_at`, one interval after the last one taken (a generic cell
-- rate algorithm on one row). A second never sees more requests than the rate allows, whichever process sent
-- them (issue 34: the task queue's rate limit paced activity starts, not the requests themselves).
CREATE TABLE platform_request_pacing (
  id       smallint PRIMARY KEY CHECK (id = 1),
  next_at  timestamptz NOT NULL
);
INSERT INTO platform_request_pacing (id, next_at) VALUES (1, now());
