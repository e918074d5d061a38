//! Model routing: the routing log shared by the hooks, labelling and outcomes.

pub mod log;
