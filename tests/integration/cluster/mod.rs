//! Scale-out on etcd (issue #14) against a real etcd cluster on loopback: the etcd store
//! (`store`), then three real `xray` processes sharing it (`nodes`), and monitors handed over
//! when their node is killed (`monitors`), policies in force on every node (`policy`), and the
//! keyspace restored from an etcd snapshot (`backup`). Needs Debian's
//! `etcd-server` (`scripts/deps.sh` installs it). One shared 3-member cluster serves most
//! tests, each in a keyspace of its own; the leader-kill, full-database and snapshot tests start their own.

mod backup;
pub mod etcd;
mod feedback;
mod monitors;
mod nodes;
mod policy;
mod signing;
mod store;
