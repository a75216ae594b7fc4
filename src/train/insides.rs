//! What the page shows of a model's insides: intermediate results of a forward pass and the
//! values of chosen parameters, each set read back from the GPU at once.

use super::{Learner, Session};
use crate::data::Tokens;
use crate::nn::Gpt;
use crate::{no_grad, Error, Result, Tensor};

/// A named tensor read back: its shape and values.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Inside {
    pub name: String,
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
}

impl Session {
    /// The classifier's insides for the inputs `x` ([n, features] row by row), then its class
    /// probabilities as "output" [n, classes].
    pub async fn insides(&self, x: Vec<f32>, n: usize) -> Result<Vec<Inside>> {
        let Learner::Classifier { model, .. } = &self.learner else {
            return Err(not_for("a GPT's insides are its attention weights")());
        };
        let features = x.len() / n.max(1);
        let x = Tensor::from_vec(x, &[n, features], &self.device)?;
        let named = no_grad(|| {
            let mut named = model.as_model().insides(&x)?;
            named.push(("output".into(), model.forward(&x)?.softmax()?));
            Ok::<_, Error>(named)
        })?;
        read_all(named).await
    }

    /// Each layer's attention weights over `prompt` (its last `context` tokens): one
    /// [heads, T, T] per layer.
    pub async fn attention(&self, prompt: &str) -> Result<Vec<Inside>> {
        let (model, _, tokens) = self.attended(prompt)?;
        if tokens.is_empty() {
            return Err(Error::Invalid {
                op: "attention",
                why: "the prompt is empty".into(),
            });
        }
        let t = tokens.len();
        let x = Tensor::from_u32(tokens, &[1, t], &self.device)?;
        let named = no_grad(|| crate::nn::Model::insides(model, &x))?;
        read_all(named).await
    }

    /// The text of each token `attention` reads of `prompt`: a character each for the
    /// character GPT, a piece of a word for GPT-2 (bytes that are not UTF-8 on their own as
    /// U+FFFD).
    pub fn attention_labels(&self, prompt: &str) -> Result<Vec<String>> {
        let (_, tokenizer, tokens) = self.attended(prompt)?;
        Ok(tokens
            .iter()
            .map(|&t| String::from_utf8_lossy(&tokenizer.token_bytes(t)).into_owned())
            .collect())
    }

    /// The GPT, its tokenizer and the tokens of `prompt` its attention reads: the last
    /// `context` of them.
    fn attended(&self, prompt: &str) -> Result<(&Gpt, &dyn Tokens, Vec<u32>)> {
        let Learner::Text { model, data } = &self.learner else {
            return Err(not_for("only a GPT has attention")());
        };
        let tokenizer = data.tokenizer.tokens()?;
        let mut tokens = tokenizer.encode(prompt)?;
        tokens.drain(..tokens.len().saturating_sub(model.config.context));
        Ok((model, tokenizer, tokens))
    }

    /// The values of the parameters named (PyTorch names), in the order asked.
    pub async fn read_parameters(&self, names: &[&str]) -> Result<Vec<Inside>> {
        let named = names
            .iter()
            .map(|&name| {
                let found = self.params.iter().find(|(n, _)| n == name);
                found.cloned().ok_or_else(|| Error::Invalid {
                    op: "parameters",
                    why: format!("the model has no parameter {name}"),
                })
            })
            .collect::<Result<_>>()?;
        read_all(named).await
    }
}

fn not_for(why: &'static str) -> impl Fn() -> Error {
    move || Error::Invalid {
        op: "insides",
        why: why.into(),
    }
}

/// Reads named tensors back in one transfer: flattened, joined, read, then cut apart.
pub(super) async fn read_all(named: Vec<(String, Tensor)>) -> Result<Vec<Inside>> {
    if named.is_empty() {
        return Ok(Vec::new());
    }
    let flat = no_grad(|| {
        let parts = named
            .iter()
            .map(|(_, t)| t.reshape(&[t.numel()]))
            .collect::<Result<Vec<_>>>()?;
        Tensor::concat(&parts, 0)
    })?;
    let values = flat.to_vec().await?;
    let mut start = 0;
    Ok(named
        .into_iter()
        .map(|(name, t)| {
            let end = start + t.numel();
            let inside = Inside {
                name,
                shape: t.shape().to_vec(),
                values: values[start..end].to_vec(),
            };
            start = end;
            inside
        })
        .collect())
}
