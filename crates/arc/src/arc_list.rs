//! Node arena and intrusive lists behind the ARC (ZFS counterpart: the `multilist_t` sublists
//! and `arc_buf_hdr_t` headers used by arc.c).
//!
//! Theory: the Megiddo/Modha ARC keeps four LRU lists (T1, T2, B1, B2). A pointer-linked list
//! in Rust costs an allocation per node and fights the borrow checker, so every entry — cached
//! or ghost — lives in one arena (`Vec` of slots with a free list) and the lists link nodes by
//! arena index. Moving a node between lists, unlinking it, or taking a list's tail is O(1).
//! Unlike the paper, which counts pages, each list also keeps a byte total: entries have sizes
//! (a 512-byte indirect block and a 1 MiB data block are not the same cost), and the caller
//! bounds lists by bytes. Ghost nodes keep their key and size but no value.
//!
//! Locking model: none here. The arena is plain data owned by one `AdaptiveReplacementCache`;
//! callers that share it wrap the owner in a lock (see `arc_shared`).
//!
//! Invariants (checked by `ArcArena::check_invariants` in tests): every occupied slot is on
//! exactly one list; each list's `bytes` and `count` equal the sums over its nodes; `prev` and
//! `next` links agree; ghost nodes hold no value and resident nodes hold one.

/// Index of a node in the arena. `NIL` ends a list.
pub(crate) type NodeIndex = usize;

/// Link value meaning "no node".
pub(crate) const NIL: NodeIndex = usize::MAX;

/// Number of lists an arena maintains (one per `ListKind`).
pub(crate) const LIST_COUNT: usize = 4;

/// The four ARC lists. T1/T2/B1/B2 in the paper; `ARC_mru`, `ARC_mfu`, `ARC_mru_ghost`,
/// `ARC_mfu_ghost` in arc.c.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListKind {
    /// Resident, seen once recently (T1).
    Mru = 0,
    /// Resident, seen at least twice (T2).
    Mfu = 1,
    /// Evicted from MRU; key and size only (B1).
    MruGhost = 2,
    /// Evicted from MFU; key and size only (B2).
    MfuGhost = 3,
}

impl ListKind {
    /// True for the two lists whose nodes hold values.
    pub(crate) fn is_resident(self) -> bool {
        matches!(self, ListKind::Mru | ListKind::Mfu)
    }
}

/// One cached or ghost entry.
pub(crate) struct Node<K, V> {
    pub(crate) key: K,
    /// `Some` on resident lists, `None` on ghost lists.
    pub(crate) value: Option<V>,
    pub(crate) size_bytes: u64,
    pub(crate) list: ListKind,
    prev: NodeIndex,
    next: NodeIndex,
}

/// Head (most recent), tail (least recent) and totals of one list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ListHead {
    head: NodeIndex,
    tail: NodeIndex,
    pub(crate) bytes: u64,
    pub(crate) count: u64,
}

impl ListHead {
    const EMPTY: ListHead = ListHead {
        head: NIL,
        tail: NIL,
        bytes: 0,
        count: 0,
    };
}

enum Slot<K, V> {
    Occupied(Node<K, V>),
    Vacant { next_free: NodeIndex },
}

/// Arena of nodes plus the four intrusive lists threaded through it.
pub(crate) struct ArcArena<K, V> {
    slots: Vec<Slot<K, V>>,
    free_head: NodeIndex,
    lists: [ListHead; LIST_COUNT],
}

impl<K, V> ArcArena<K, V> {
    pub(crate) fn new() -> Self {
        ArcArena {
            slots: Vec::new(),
            free_head: NIL,
            lists: [ListHead::EMPTY; LIST_COUNT],
        }
    }

    /// Drops every node and empties every list.
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.free_head = NIL;
        self.lists = [ListHead::EMPTY; LIST_COUNT];
    }

    pub(crate) fn list(&self, kind: ListKind) -> &ListHead {
        &self.lists[kind as usize]
    }

    /// Least recently used node of `kind`, if any.
    pub(crate) fn tail(&self, kind: ListKind) -> Option<NodeIndex> {
        let tail = self.lists[kind as usize].tail;
        (tail != NIL).then_some(tail)
    }

    pub(crate) fn node(&self, index: NodeIndex) -> &Node<K, V> {
        match self.slots.get(index) {
            Some(Slot::Occupied(node)) => node,
            _ => panic!("ARC arena invariant broken: index {index} is not an occupied slot"),
        }
    }

    pub(crate) fn node_mut(&mut self, index: NodeIndex) -> &mut Node<K, V> {
        match self.slots.get_mut(index) {
            Some(Slot::Occupied(node)) => node,
            _ => panic!("ARC arena invariant broken: index {index} is not an occupied slot"),
        }
    }

    /// Allocates a node and links it at the head (most recent end) of `list`.
    pub(crate) fn push_head(
        &mut self,
        list: ListKind,
        key: K,
        value: Option<V>,
        size_bytes: u64,
    ) -> NodeIndex {
        assert_eq!(
            value.is_some(),
            list.is_resident(),
            "resident nodes carry values and ghost nodes do not"
        );
        let node = Node {
            key,
            value,
            size_bytes,
            list,
            prev: NIL,
            next: NIL,
        };
        let index = if self.free_head != NIL {
            let index = self.free_head;
            self.free_head = match self.slots[index] {
                Slot::Vacant { next_free } => next_free,
                Slot::Occupied(_) => panic!("ARC arena invariant broken: free list hit a node"),
            };
            self.slots[index] = Slot::Occupied(node);
            index
        } else {
            self.slots.push(Slot::Occupied(node));
            self.slots.len() - 1
        };
        self.link_head(index);
        index
    }

    /// Unlinks and frees a node, returning it.
    pub(crate) fn remove(&mut self, index: NodeIndex) -> Node<K, V> {
        self.unlink(index);
        let slot = std::mem::replace(
            &mut self.slots[index],
            Slot::Vacant {
                next_free: self.free_head,
            },
        );
        self.free_head = index;
        match slot {
            Slot::Occupied(node) => node,
            Slot::Vacant { .. } => panic!("ARC arena invariant broken: removed a vacant slot"),
        }
    }

    /// Moves a node to the head of `list`, setting its value (which must match the list kind:
    /// `Some` for resident lists, `None` for ghosts). Returns the previous value.
    pub(crate) fn move_to_head(
        &mut self,
        index: NodeIndex,
        list: ListKind,
        value: Option<V>,
    ) -> Option<V> {
        assert_eq!(
            value.is_some(),
            list.is_resident(),
            "resident nodes carry values and ghost nodes do not"
        );
        self.unlink(index);
        let node = self.node_mut(index);
        node.list = list;
        let previous = std::mem::replace(&mut node.value, value);
        self.link_head(index);
        previous
    }

    fn link_head(&mut self, index: NodeIndex) {
        let (kind, size_bytes) = {
            let node = self.node(index);
            (node.list, node.size_bytes)
        };
        let old_head = self.lists[kind as usize].head;
        {
            let node = self.node_mut(index);
            node.prev = NIL;
            node.next = old_head;
        }
        if old_head != NIL {
            self.node_mut(old_head).prev = index;
        }
        let list = &mut self.lists[kind as usize];
        list.head = index;
        if list.tail == NIL {
            list.tail = index;
        }
        list.bytes += size_bytes;
        list.count += 1;
    }

    fn unlink(&mut self, index: NodeIndex) {
        let (kind, size_bytes, prev, next) = {
            let node = self.node(index);
            (node.list, node.size_bytes, node.prev, node.next)
        };
        if prev != NIL {
            self.node_mut(prev).next = next;
        } else {
            self.lists[kind as usize].head = next;
        }
        if next != NIL {
            self.node_mut(next).prev = prev;
        } else {
            self.lists[kind as usize].tail = prev;
        }
        let list = &mut self.lists[kind as usize];
        assert!(
            list.bytes >= size_bytes && list.count >= 1,
            "list totals must cover every node on the list"
        );
        list.bytes -= size_bytes;
        list.count -= 1;
        let node = self.node_mut(index);
        node.prev = NIL;
        node.next = NIL;
    }

    /// Walks every list and checks links and totals. O(n): tests only.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let kinds = [
            ListKind::Mru,
            ListKind::Mfu,
            ListKind::MruGhost,
            ListKind::MfuGhost,
        ];
        let mut linked = 0usize;
        for kind in kinds {
            let list = self.list(kind);
            let (mut bytes, mut count) = (0u64, 0u64);
            let mut prev = NIL;
            let mut cursor = list.head;
            while cursor != NIL {
                let node = self.node(cursor);
                assert_eq!(node.list, kind, "node on list {kind:?} says otherwise");
                assert_eq!(node.prev, prev, "prev link disagrees with walk order");
                assert_eq!(node.value.is_some(), kind.is_resident());
                bytes += node.size_bytes;
                count += 1;
                prev = cursor;
                cursor = node.next;
            }
            assert_eq!(list.tail, prev, "tail of {kind:?} is not the last node");
            assert_eq!(list.bytes, bytes, "byte total of {kind:?}");
            assert_eq!(list.count, count, "count of {kind:?}");
            linked += count as usize;
        }
        let occupied = self
            .slots
            .iter()
            .filter(|slot| matches!(slot, Slot::Occupied(_)))
            .count();
        assert_eq!(
            linked, occupied,
            "every occupied slot is on exactly one list"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Exists because the lists are hand-linked by index: pushing, moving and removing in mixed
    // order must keep head/tail, totals and the free list right, and reuse freed slots.
    #[test]
    fn arena_links_move_and_reuse_slots() {
        let mut arena: ArcArena<u32, u32> = ArcArena::new();
        let a = arena.push_head(ListKind::Mru, 1, Some(10), 100);
        let b = arena.push_head(ListKind::Mru, 2, Some(20), 200);
        let c = arena.push_head(ListKind::Mru, 3, Some(30), 300);
        arena.check_invariants();
        assert_eq!(arena.tail(ListKind::Mru), Some(a));
        assert_eq!(arena.list(ListKind::Mru).bytes, 600);

        let old = arena.move_to_head(b, ListKind::MruGhost, None);
        assert_eq!(old, Some(20));
        arena.check_invariants();
        assert_eq!(arena.list(ListKind::Mru).bytes, 400);
        assert_eq!(arena.list(ListKind::MruGhost).bytes, 200);

        let removed = arena.remove(a);
        assert_eq!(removed.key, 1);
        assert_eq!(arena.tail(ListKind::Mru), Some(c));
        let d = arena.push_head(ListKind::Mfu, 4, Some(40), 50);
        assert_eq!(d, a, "freed slot is reused");
        arena.check_invariants();

        arena.clear();
        arena.check_invariants();
        assert_eq!(arena.tail(ListKind::Mfu), None);
    }
}
