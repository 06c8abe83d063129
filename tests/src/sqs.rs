//! SQS queues in a stack's moto, as the template's dead-letter queues: created, filled with
//! the messages Lambda parks there (the event as the body, with Lambda's error attributes),
//! and counted.

use aws_sdk_sqs::types::{MessageAttributeValue, QueueAttributeName};

use crate::stack::Stack;

/// An SQS client on a stack's emulator, with its own runtime.
pub struct Queues {
    client: aws_sdk_sqs::Client,
    runtime: tokio::runtime::Runtime,
}

impl Queues {
    /// SQS as the stack's environment has it (moto serves it at the same endpoint as S3 and
    /// DynamoDB), trusting the stack's certificate.
    pub fn of(stack: &Stack) -> Queues {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = stack.sdk_config();
        Queues {
            client: tfreg_aws::config::sqs_client(&config),
            runtime,
        }
    }

    /// Creates a queue as the template's dead-letter queues are (14 days' retention);
    /// returns its URL.
    pub fn create(&self, name: &str) -> String {
        let create = self
            .client
            .create_queue()
            .queue_name(name)
            .attributes(QueueAttributeName::MessageRetentionPeriod, "1209600");
        let out = self.runtime.block_on(create.send()).unwrap();
        out.queue_url().unwrap().to_owned()
    }

    /// Parks `body` in the queue as Lambda does an asynchronous invocation it gave up on:
    /// the event as the body, and why it failed as attributes. Returns the message's id.
    pub fn park(&self, queue: &str, body: &str) -> String {
        let text = |value: &str| {
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value(value)
                .build()
                .unwrap()
        };
        let send = self
            .client
            .send_message()
            .queue_url(queue)
            .message_body(body)
            .message_attributes("RequestID", text("00000000-0000-0000-0000-000000000000"))
            .message_attributes("ErrorCode", text("200"))
            .message_attributes("ErrorMessage", text("tfreg.IndexFailure: throttled"));
        let out = self.runtime.block_on(send.send()).unwrap();
        out.message_id().unwrap().to_owned()
    }

    /// How many messages the queue holds, visible or not (received and not deleted).
    pub fn count(&self, queue: &str) -> usize {
        let get = self
            .client
            .get_queue_attributes()
            .queue_url(queue)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible);
        let out = self.runtime.block_on(get.send()).unwrap();
        let attributes = out.attributes().cloned().unwrap_or_default();
        [
            QueueAttributeName::ApproximateNumberOfMessages,
            QueueAttributeName::ApproximateNumberOfMessagesNotVisible,
        ]
        .iter()
        .map(|name| {
            attributes
                .get(name)
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0)
        })
        .sum()
    }

    /// The bodies of the messages visible now, with their ids (each received and shown
    /// again at once, so they stay).
    pub fn peek(&self, queue: &str) -> Vec<(String, String)> {
        let receive = self
            .client
            .receive_message()
            .queue_url(queue)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .visibility_timeout(0);
        let out = self.runtime.block_on(receive.send()).unwrap();
        out.messages()
            .iter()
            .map(|m| {
                (
                    m.message_id().unwrap_or_default().to_owned(),
                    m.body().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// Deletes every message (as `aws sqs purge-queue`).
    pub fn purge(&self, queue: &str) {
        let purge = self.client.purge_queue().queue_url(queue);
        self.runtime.block_on(purge.send()).unwrap();
    }
}

/// One S3 event of every record of `events` (each an S3 event's JSON, from
/// [`Stack::s3_event`]), as a batch of notifications reaches one invocation.
pub fn batched(events: &[String]) -> String {
    let records: Vec<serde_json::Value> = events
        .iter()
        .flat_map(|event| {
            let event: serde_json::Value = serde_json::from_str(event).unwrap();
            event["Records"].as_array().cloned().unwrap_or_default()
        })
        .collect();
    serde_json::json!({ "Records": records }).to_string()
}
