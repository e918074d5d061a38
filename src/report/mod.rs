//! Not built yet (see the open issues).
