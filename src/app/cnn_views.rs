//! Inside the CNN: its first layer's filters, and each conv layer's feature maps for one digit.

use super::dom::{diverging, put_image, set_text, sharp};
use crate::train::Inside;

/// Feature maps drawn per layer.
const MAPS_SHOWN: usize = 8;

/// The first conv layer's filters ([channels, 1, k, k]), each a k × k square of weights.
pub fn draw_filters(weight: &Inside) {
    let Some((ctx, w, h)) = sharp("filters") else {
        return;
    };
    let (channels, k) = (weight.shape[0], weight.shape[3]);
    let max = weight.values.iter().fold(1e-6f32, |m, v| m.max(v.abs()));
    let side = ((w - 4.0) / channels as f64 - 4.0).min(h - 8.0);
    ctx.set_image_smoothing_enabled(false);
    for (c, filter) in weight.values.chunks(k * k).enumerate() {
        let mut rgba: Vec<u8> = filter
            .iter()
            .flat_map(|v| {
                let [r, g, b] = diverging(v / max);
                [r, g, b, 255]
            })
            .collect();
        let x = 4.0 + c as f64 * (side + 4.0);
        put_image(&ctx, &mut rgba, k as u32, k as u32, x, 4.0, (side, side));
    }
}

/// Each layer's feature maps ([1, channels, side, side]) for one digit, a row per layer; the
/// caption says which digit.
pub fn draw_maps(maps: &[Inside], which: &str) {
    // Only conv layers have maps ([1, channels, side, side]); an MLP's layers are rows.
    let maps: Vec<&Inside> = maps.iter().filter(|m| m.shape.len() == 4).collect();
    let Some((ctx, w, h)) = sharp("feature-maps") else {
        return;
    };
    let row = h / maps.len().max(1) as f64;
    let side = (row - 18.0).min((w - 8.0) / MAPS_SHOWN as f64 - 4.0);
    ctx.set_image_smoothing_enabled(false);
    ctx.set_font("11px sans-serif");
    for (l, layer) in maps.iter().enumerate() {
        let (channels, s) = (layer.shape[1], layer.shape[2]);
        let y = l as f64 * row;
        ctx.set_fill_style_str("#5a6270");
        let label = match channels > MAPS_SHOWN {
            true => format!("{}: {MAPS_SHOWN} of {channels} maps, {s} × {s}", layer.name),
            false => format!("{}: {channels} maps of {s} × {s}", layer.name),
        };
        let _ = ctx.fill_text(&label, 4.0, y + 12.0);
        for (c, map) in layer.values.chunks(s * s).take(MAPS_SHOWN).enumerate() {
            let max = map.iter().fold(1e-6f32, |m, v| m.max(*v));
            let mut rgba: Vec<u8> = map
                .iter()
                .flat_map(|v| {
                    let g = 255 - (255.0 * (v / max).clamp(0.0, 1.0)) as u8;
                    [g, g, g, 255]
                })
                .collect();
            let x = 4.0 + c as f64 * (side + 4.0);
            put_image(
                &ctx,
                &mut rgba,
                s as u32,
                s as u32,
                x,
                y + 16.0,
                (side, side),
            );
        }
    }
    set_text(
        "maps-caption",
        &format!("Feature maps for {which} (dark: strong)."),
    );
}
