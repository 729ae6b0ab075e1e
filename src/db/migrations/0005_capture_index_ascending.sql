-- The endpoint index of captured_requests was (endpoint_id, id desc). Ids are
-- time-ordered, so every new capture went to the left edge of its endpoint's
-- range, where B-tree pages split in halves: 38 MB for 450,000 captures
-- against 21 MB for (endpoint_id, id), which grows at the right edge like an
-- append. "Newest first" pages read the ascending index backwards, which a
-- B-tree does as cheaply (test/requests checks the plan).
drop index captured_requests_endpoint;
create index captured_requests_endpoint on captured_requests (endpoint_id, id);
