//! `lws-controller`: runs the example LeaderWorkerSet controller against the cluster of the current
//! kubeconfig (or in-cluster config). `lws-controller crd` prints the CustomResourceDefinition.

use kube::CustomResourceExt;
use lws_controller::LeaderWorkerSet;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("crd") {
        println!("{}", serde_json::to_string_pretty(&LeaderWorkerSet::crd())?);
        return Ok(());
    }
    let client = kube::Client::try_default().await?;
    lws_controller::controller::run(client, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    Ok(())
}
