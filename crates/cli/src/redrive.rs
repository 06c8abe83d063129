//! `tfreg redrive` (the AWS shape): the S3 events parked in the indexer's dead-letter queue,
//! indexed as the indexer function would have, each message deleted once its keys are in
//! the table and their documents made. What cannot be indexed stays in the queue.

use clap::Args;
use tfreg_aws::settings::{BucketSetting, HostnameSetting, TableSetting};

/// Where the queue's URL comes from when `--queue` is not given.
const QUEUE_ENV: &str = "TFREG_DEAD_LETTER_QUEUE";

#[derive(Args, Debug)]
pub struct RedriveArgs {
    /// The indexer's dead-letter queue (its URL: the stack's `IndexerDeadLetterQueueUrl`).
    #[arg(long, env = QUEUE_ENV, value_parser = queue_url)]
    queue: String,
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    bucket: BucketSetting,
    /// As the indexer function has it: uploads under `mirror/<hostname>/` are refused.
    #[command(flatten)]
    hostname: HostnameSetting,
}

/// An SQS queue URL (`https://sqs.REGION.amazonaws.com/ACCOUNT/NAME`, or an emulator's).
fn queue_url(value: &str) -> Result<String, String> {
    let value = value.trim();
    let url = url::Url::parse(value).map_err(|e| format!("is not a queue URL: {e}"))?;
    if !matches!(url.scheme(), "https" | "http") || url.path().trim_matches('/').is_empty() {
        return Err(
            "is not a queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME; a queue's ARN or name is not enough)"
                .into(),
        );
    }
    Ok(value.to_owned())
}

#[cfg(not(feature = "aws"))]
pub async fn run(args: RedriveArgs) -> anyhow::Result<()> {
    let _ = (args.queue, args.table, args.bucket, args.hostname);
    Err(crate::backend::not_built())
}

/// Reads the queue until a receive finds no message it has not seen, indexes each event's
/// keys, makes their documents, and deletes the messages that are done. Idempotent, as the
/// indexer is: an event redriven twice changes nothing the second time.
#[cfg(feature = "aws")]
pub async fn run(args: RedriveArgs) -> anyhow::Result<()> {
    use std::time::Duration;

    use tfreg_core::Indexer;

    let names = crate::backend::AwsNames::both(&args.table, &args.bucket)?;
    let (_, bucket) = names.table_and_bucket()?;
    let aws = names.connect(Duration::from_secs(300), None, true).await?;
    let indexer = Indexer::new(aws.metadata, aws.artifacts)
        .with_hostname(args.hostname.get())
        .with_deferred_documents();
    let queue = tfreg_aws::queue::DeadLetterQueue::from_env(&args.queue).await;
    let summary = drive::redrive(&indexer, &queue, bucket).await?;
    println!(
        "redrove {} messages ({} keys) from {}; {} left in the queue",
        summary.redriven,
        summary.keys,
        queue.url(),
        summary.left.len()
    );
    if !summary.left.is_empty() {
        anyhow::bail!(
            "{} messages could not be redriven and stay in the queue: {}",
            summary.left.len(),
            tfreg_core::text::for_terminal(&summary.left.join("; "))
        );
    }
    Ok(())
}

#[cfg(feature = "aws")]
mod drive {
    use std::collections::HashSet;
    use std::time::Duration;

    use tfreg_aws::queue::{DeadLetterQueue, QueuedMessage};
    use tfreg_core::store::ErrorChain;
    use tfreg_core::{IndexOutcome, Indexer};

    /// How long a receive waits for a message: an empty answer then means the queue has
    /// none visible.
    const WAIT: Duration = Duration::from_secs(2);
    /// How long a received message stays hidden while its keys are indexed.
    const HIDDEN: Duration = Duration::from_secs(15 * 60);
    /// How many times a batch's documents are tried before its messages are left.
    const FLUSH_ROUNDS: u32 = 3;

    /// What a redrive did.
    #[derive(Debug, Default)]
    pub struct Summary {
        /// Messages indexed and deleted.
        pub redriven: usize,
        /// Keys they named.
        pub keys: usize,
        /// `ID (why)` of each message left in the queue.
        pub left: Vec<String>,
    }

    pub async fn redrive(
        indexer: &Indexer,
        queue: &DeadLetterQueue,
        bucket: &str,
    ) -> anyhow::Result<Summary> {
        let mut summary = Summary::default();
        let mut seen = HashSet::new();
        // Received and not deleted: shown again at the end, for the next look.
        let mut kept: Vec<QueuedMessage> = Vec::new();
        loop {
            let batch = queue.receive(WAIT, HIDDEN).await?;
            let (fresh, again): (Vec<_>, Vec<_>) =
                batch.into_iter().partition(|m| seen.insert(m.id.clone()));
            kept.extend(again);
            if fresh.is_empty() {
                break;
            }
            let mut done = Vec::new();
            for message in fresh {
                match index_message(indexer, &message, bucket).await {
                    Ok(keys) => done.push((message, keys)),
                    Err(why) => {
                        leave(&mut summary, &message, &why);
                        kept.push(message);
                    }
                }
            }
            // Documents first, then deletes: a message is gone only once nothing of it is
            // left to do.
            if let Err(why) = flush(indexer).await {
                for (message, _) in done {
                    leave(&mut summary, &message, &format!("making documents: {why}"));
                    kept.push(message);
                }
                continue;
            }
            for (message, keys) in done {
                if let Err(e) = queue.delete(&message).await {
                    leave(&mut summary, &message, &ErrorChain(&e).to_string());
                    continue;
                }
                let failure = message
                    .error_message
                    .as_deref()
                    .map(|m| format!(" (it had failed: {m})"))
                    .unwrap_or_default();
                println!(
                    "redriven {}: {keys} keys{}",
                    tfreg_core::text::for_terminal(&message.id),
                    tfreg_core::text::for_terminal(&failure)
                );
                summary.redriven += 1;
                summary.keys += keys;
            }
        }
        for message in &kept {
            if let Err(e) = queue.show_again(message).await {
                // It shows again anyway once its hidden time is over.
                tracing::warn!(message = message.id, error = %ErrorChain(&e), "cannot show a message again");
            }
        }
        Ok(summary)
    }

    /// Records that `message` stays in the queue, and says why.
    fn leave(summary: &mut Summary, message: &QueuedMessage, why: &str) {
        let line = format!("{} ({why})", message.id);
        println!("left {}", tfreg_core::text::for_terminal(&line));
        summary.left.push(line);
    }

    /// Indexes the keys of one message's event; how many, or why not.
    async fn index_message(
        indexer: &Indexer,
        message: &QueuedMessage,
        bucket: &str,
    ) -> Result<usize, String> {
        let keys = tfreg_core::s3_event::parse(&message.body, bucket)
            .map_err(|e| format!("not an S3 event of the bucket: {e}"))?;
        let mut failures = Vec::new();
        for event in &keys {
            // The principal and revision the event names: a redriven upload is judged as
            // its first delivery would have been.
            match indexer
                .index_uploaded(&event.key, event.upload().as_ref())
                .await
            {
                Ok(IndexOutcome::Rejected { key, reason }) => {
                    println!(
                        "  rejected {}",
                        tfreg_core::text::for_terminal(&format!("{key}: {reason}"))
                    );
                }
                Ok(_) => {}
                Err(e) => failures.push(format!("{}: {}", event.key, ErrorChain(&e))),
            }
        }
        match failures.is_empty() {
            true => Ok(keys.len()),
            false => Err(failures.join("; ")),
        }
    }

    /// Makes the documents of what was indexed since the last flush, a few rounds.
    async fn flush(indexer: &Indexer) -> Result<(), String> {
        let mut round = 1;
        loop {
            match indexer.flush_documents().await {
                Ok(_) => return Ok(()),
                Err(e) if round == FLUSH_ROUNDS => return Err(ErrorChain(&e).to_string()),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(500) * round).await;
                    round += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::queue_url;

    #[test]
    fn a_queue_is_named_by_its_url() {
        let url = "https://sqs.eu-west-1.amazonaws.com/123456789012/tfreg-IndexerDeadLetterQueue-X";
        assert_eq!(queue_url(&format!(" {url} ")).unwrap(), url);
        assert!(queue_url("tfreg-IndexerDeadLetterQueue-X")
            .unwrap_err()
            .contains("not a queue URL"));
        assert!(queue_url("arn:aws:sqs:eu-west-1:123456789012:q")
            .unwrap_err()
            .contains("not a queue URL"));
        assert!(queue_url("https://sqs.eu-west-1.amazonaws.com/")
            .unwrap_err()
            .contains("ARN or name"));
    }
}
