//! Scale-out on etcd (issue #14) against a real etcd cluster on loopback: the etcd store
//! (`store`). Needs Debian's `etcd-server` (`scripts/deps.sh` installs it). One shared
//! 3-member cluster serves most tests; the leader-kill and full-database tests start their own.

pub mod etcd;
mod store;
