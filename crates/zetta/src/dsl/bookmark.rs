//! Where a head's bookmarks live (OpenZFS `dsl_bookmark.c`: `dsl_bookmark_node_add`,
//! `dsl_bookmark_destroy_sync`, `dsl_bookmark_init_ds`).
//!
//! Theory. A filesystem's bookmarks are one MOS ZAP, name -> `zfs_bookmark_phys_t`
//! (Zetta writes version 1: guid, creation txg, creation time; `BOOKMARK_PHYS_SIZE_V1`,
//! so neither bookmark_v2 nor bookmark_written is ever used). `dsl_dataset_phys_t` has no
//! word for that ZAP: OpenZFS makes the head's dataset object a ZAP itself
//! (`dsl_dataset_zapify`, one reference on feature extensible_dataset) and names the
//! bookmarks ZAP there under `com.delphix:bookmarks` (`DS_FIELD_BOOKMARK_NAMES`). The
//! first bookmark of a head makes the ZAP and counts one reference on feature
//! `bookmarks` (per head, not per bookmark); the last one destroyed frees it, removes
//! the entry and gives the reference back; destroying the head does the same
//! (`dsl_destroy_head_sync_impl`). A pool without feature `bookmarks` enabled refuses to
//! make one (ENOTSUP, "bookmark feature not enabled").
//!
//! ```text
//! MOS object <head dataset> (DMU_OTN_ZAP_METADATA, bonus dsl_dataset_phys_t)
//!   "com.delphix:bookmarks" -> <bookmarks ZAP>     (+ per-dataset feature entries)
//! MOS object <bookmarks ZAP> (DMU_OTN_ZAP_METADATA)
//!   "<mark>" -> [guid, creation_txg, creation_time]
//! ```
//!
//! Formats up to 25 kept the ZAP's number in pad word 35 of the dataset record; those
//! pools are refused at import, so nothing reads that word any more (it is written 0).
//! Left out: the bookmarks ZAP is made without `U8_TEXTPREP_TOUPPER` normalization (as
//! Zetta's snapshot name maps), which only matters to case-insensitive lookups.

use super::openzfs::ot;
use super::zap_error;
use crate::dmu::IoCtx;
use crate::spa::{Spa, SpaError};
use crate::types::{ObjectId, Txg};
use crate::zap;

/// `DS_FIELD_BOOKMARK_NAMES`: the head's entry naming its bookmarks ZAP.
pub const DS_FIELD_BOOKMARK_NAMES: &str = "com.delphix:bookmarks";

/// The feature counted once per head with bookmarks.
const FEATURE_BOOKMARKS: &str = "bookmarks";

impl Spa {
    /// Whether `zfs bookmark` may run (`dsl_bookmark_create_check`'s feature test).
    pub(super) fn bookmarks_enabled(&self) -> bool {
        self.dp
            .directory
            .features
            .is_enabled("com.delphix:bookmarks")
    }

    /// The bookmarks ZAP of head `dataset` (`dsl_bookmark_init_ds`), 0 if it has none.
    pub(super) fn bookmarks_object(&self, dataset: u64) -> Result<u64, SpaError> {
        let ctx = io_ctx!(self);
        if self.dp.mos.dnode(&ctx, ObjectId(dataset))?.object_type != ot::ZAP_METADATA {
            return Ok(0);
        }
        let found = zap::zap_lookup(
            &self.dp.mos,
            &ctx,
            ObjectId(dataset),
            DS_FIELD_BOOKMARK_NAMES,
        )
        .map_err(zap_error)?;
        match found.as_deref() {
            None => Ok(0),
            Some(&[object]) if object != 0 => Ok(object),
            Some(_) => Err(SpaError::Corrupt(format!(
                "dataset {dataset}: {DS_FIELD_BOOKMARK_NAMES} is not one object number"
            ))),
        }
    }

    /// The bookmarks ZAP of head `dataset`, made in txg `txg` if it has none
    /// (`dsl_bookmark_node_add`): the ZAP, one reference on `bookmarks`, the dataset
    /// zapified and its entry.
    pub(super) fn bookmarks_object_hold(
        &mut self,
        dataset: u64,
        txg: Txg,
    ) -> Result<u64, SpaError> {
        let existing = self.bookmarks_object(dataset)?;
        if existing != 0 {
            return Ok(existing);
        }
        let ctx = io_ctx!(self, txg);
        let object = zap::zap_create(&mut self.dp.mos, &ctx, ot::ZAP_METADATA)
            .map_err(zap_error)?
            .0;
        let features = &mut self.dp.directory.features;
        features.count_use(&mut self.dp.mos, &ctx, FEATURE_BOOKMARKS, true)?;
        features.zapify_dataset(&mut self.dp.mos, &ctx, dataset)?;
        zap::zap_add(
            &mut self.dp.mos,
            &ctx,
            ObjectId(dataset),
            DS_FIELD_BOOKMARK_NAMES,
            &[object],
        )
        .map_err(zap_error)?;
        assert_eq!(self.bookmarks_object(dataset)?, object);
        Ok(object)
    }

    /// After a bookmark left head `dataset`: if its ZAP is empty, it goes with its entry
    /// and its reference on `bookmarks` (`dsl_bookmark_destroy_sync`). `force`: the head
    /// itself is being destroyed, bookmarks and all.
    pub(super) fn bookmarks_object_release(
        &mut self,
        dataset: u64,
        force: bool,
    ) -> Result<(), SpaError> {
        let object = self.bookmarks_object(dataset)?;
        if object == 0 {
            return Ok(());
        }
        let ctx = io_ctx!(self);
        if !force && zap::zap_count(&self.dp.mos, &ctx, ObjectId(object)).map_err(zap_error)? > 0 {
            return Ok(());
        }
        zap::zap_destroy(&mut self.dp.mos, &ctx, ObjectId(object)).map_err(zap_error)?;
        self.dp
            .directory
            .features
            .count_use(&mut self.dp.mos, &ctx, FEATURE_BOOKMARKS, false)?;
        zap::zap_remove(
            &mut self.dp.mos,
            &ctx,
            ObjectId(dataset),
            DS_FIELD_BOOKMARK_NAMES,
        )
        .map_err(zap_error)?;
        Ok(())
    }
}
