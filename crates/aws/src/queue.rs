//! The indexer's dead-letter queue (SQS), as `tfreg redrive` reads it: the S3 events Lambda
//! gave up on, received in batches, deleted once indexed, and the others made visible again
//! for the next look.

use std::time::Duration;

use aws_sdk_sqs::types::MessageSystemAttributeName;
use tfreg_core::StoreError;

/// The most messages one receive takes (SQS's own limit).
pub const RECEIVE_BATCH: i32 = 10;

/// One message parked in the queue.
#[derive(Debug, Clone)]
pub struct QueuedMessage {
    /// SQS's id of the message (what the redrive names it by).
    pub id: String,
    /// What deletes it or changes its visibility (this receive's).
    pub receipt: String,
    /// The body: for a Lambda asynchronous invocation's dead-letter queue, the event itself.
    pub body: String,
    /// How many times the message was received, this time included.
    pub receive_count: u32,
    /// Lambda's `ErrorMessage` attribute: why the last attempt failed, when it said.
    pub error_message: Option<String>,
}

/// A queue by its URL.
#[derive(Debug, Clone)]
pub struct DeadLetterQueue {
    client: aws_sdk_sqs::Client,
    url: String,
}

impl DeadLetterQueue {
    /// The queue at `url`, with the SDK configured by the standard environment.
    pub async fn from_env(url: &str) -> DeadLetterQueue {
        let config = crate::config::sdk_config().await;
        DeadLetterQueue::new(crate::config::sqs_client(&config), url)
    }

    /// The queue at `url` through `client`.
    pub fn new(client: aws_sdk_sqs::Client, url: &str) -> DeadLetterQueue {
        DeadLetterQueue {
            client,
            url: url.to_owned(),
        }
    }

    /// The queue's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Up to [`RECEIVE_BATCH`] messages, waiting up to `wait` for one (long polling, so an
    /// empty answer means the queue has nothing visible), each hidden from other readers
    /// for `hidden` (until deleted or shown again).
    pub async fn receive(
        &self,
        wait: Duration,
        hidden: Duration,
    ) -> Result<Vec<QueuedMessage>, StoreError> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(RECEIVE_BATCH)
            .wait_time_seconds(wait.as_secs().min(20) as i32)
            .visibility_timeout(hidden.as_secs().min(12 * 3600) as i32)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_attribute_names("All")
            .send()
            .await
            .map_err(|e| self.error("cannot receive from", e.into_service_error()))?;
        Ok(out
            .messages()
            .iter()
            .filter_map(|m| {
                let receive_count = m
                    .attributes()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(1);
                let error_message = m
                    .message_attributes()
                    .and_then(|a| a.get("ErrorMessage"))
                    .and_then(|v| v.string_value())
                    .map(str::to_owned);
                Some(QueuedMessage {
                    id: m.message_id()?.to_owned(),
                    receipt: m.receipt_handle()?.to_owned(),
                    body: m.body().unwrap_or_default().to_owned(),
                    receive_count,
                    error_message,
                })
            })
            .collect())
    }

    /// Deletes a received message.
    pub async fn delete(&self, message: &QueuedMessage) -> Result<(), StoreError> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(&message.receipt)
            .send()
            .await
            .map_err(|e| self.error("cannot delete a message from", e.into_service_error()))?;
        Ok(())
    }

    /// Makes a received message visible again at once (it stays in the queue).
    pub async fn show_again(&self, message: &QueuedMessage) -> Result<(), StoreError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(&message.receipt)
            .visibility_timeout(0)
            .send()
            .await
            .map_err(|e| self.error("cannot show a message again in", e.into_service_error()))?;
        Ok(())
    }

    fn error(
        &self,
        what: &str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::with_source(format!("{what} the queue {}", self.url), source)
    }
}
