//! What the actor tests share: running items through the actor chain the binary runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use actix::prelude::*;
use toolstream_actors::item::Item;
use toolstream_actors::messages::{Batch, StageFailed};
use toolstream_actors::shard::ShardConfig;
use toolstream_schemas::OutputEvent;

/// Collects what the last stage delivers.
struct Collect(Vec<OutputEvent>);

impl Actor for Collect {
    type Context = Context<Self>;
}

impl Handler<Batch<OutputEvent>> for Collect {
    type Result = Result<Vec<OutputEvent>, StageFailed>;
    fn handle(&mut self, mut batch: Batch<OutputEvent>, _: &mut Context<Self>) -> Self::Result {
        self.0.append(&mut batch.items);
        Ok(batch.items)
    }
}

#[derive(Message)]
#[rtype(result = "Vec<OutputEvent>")]
struct Take;

impl Handler<Take> for Collect {
    type Result = MessageResult<Take>;
    fn handle(&mut self, _: Take, _: &mut Context<Self>) -> Self::Result {
        MessageResult(std::mem::take(&mut self.0))
    }
}

/// Hand `batches` to the shard's stages started as actix actors (`shard::start_shard`, as the
/// binary's shards do) on a System of their own, each batch sent while the one before it is still
/// on its way, as the shard's pump does; returns what the last stage delivered.
pub fn through_actors(batches: Vec<Vec<Item>>) -> Vec<OutputEvent> {
    actix::System::new().block_on(async move {
        let collect = Collect(Vec::new()).start();
        let first = toolstream_actors::shard::start_shard(&ShardConfig::default(), collect.clone().recipient());
        // One batch ahead, as the shard's pump sends them: the next is on its way before the
        // last is through every stage.
        let mut ahead = None;
        for batch in batches {
            if let Some(before) = ahead.replace(first.send(Batch::new(batch))) {
                assert!(before.await.unwrap().is_ok(), "a stage failed");
            }
        }
        if let Some(last) = ahead {
            assert!(last.await.unwrap().is_ok(), "a stage failed");
        }
        collect.send(Take).await.unwrap()
    })
}
