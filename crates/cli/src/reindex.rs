//! `tfreg reindex` (the AWS shape): every object in the bucket, and every object the table
//! still has records of, through the indexer, as S3 events would deliver them.

use std::time::Duration;

use clap::Args;
use tfreg_aws::settings::{BucketSetting, HostnameSetting, TableSetting};
use tfreg_core::Indexer;

use crate::backend::AwsNames;

#[derive(Args, Debug)]
pub struct ReindexArgs {
    #[command(flatten)]
    table: TableSetting,
    #[command(flatten)]
    bucket: BucketSetting,
    /// As the indexer function has it: uploads under `mirror/<hostname>/` are refused.
    #[command(flatten)]
    hostname: HostnameSetting,
}

/// Makes the table match the bucket both ways. Idempotent: run it after the first deploy
/// onto an existing bucket, after lost events, or to rebuild a lost table.
pub async fn run(args: ReindexArgs) -> anyhow::Result<()> {
    let names = AwsNames::both(&args.table, &args.bucket)?;
    let (_, bucket) = names.table_and_bucket()?;
    let aws = names.connect(Duration::from_secs(300), None, true).await?;
    // Each module is listed once, at the end, not after each of its versions.
    let indexer = Indexer::new(aws.metadata, aws.artifacts)
        .with_hostname(args.hostname.get())
        .with_deferred_documents();
    let report = crate::reindex_with_progress(&indexer, "reindexing {pos}/{len} objects").await?;
    for change in &report.changes {
        // Keys and refusal reasons from the bucket: escaped.
        println!("{}", tfreg_core::text::for_terminal(&change.to_string()));
    }
    println!(
        "reindexed s3://{}: {} changed, {} published, {} rejected (see `tfreg status` or the log), {} failed",
        bucket,
        report.changes.len(),
        report.published,
        report.rejected,
        report.failed
    );
    if report.failed > 0 {
        anyhow::bail!(
            "{} objects could not be indexed; run reindex again",
            report.failed
        );
    }
    Ok(())
}
