-- 0004_redo_xattr: the extended attribute an op sets or removes (setxattr,
-- removexattr on a host object that keeps its identity at commit).
ALTER TABLE redo ADD COLUMN xattr_name TEXT NOT NULL DEFAULT '';
ALTER TABLE redo ADD COLUMN xattr_value BLOB;
