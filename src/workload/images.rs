//! Images sent with chat-like prompts: synthetic ones (sizes drawn from a normal per
//! `--image-width-*`/`--image-height-*`, pixels from the seed, encoded as PNG or JPEG by the
//! `image` crate) or the files of `--image-dir`; and how each API carries them.
//!
//! Forms on the wire (base64 of the encoded file, no line breaks):
//!
//! | API | content part |
//! |---|---|
//! | chat | `{"type":"image_url","image_url":{"url":"data:image/png;base64,..."}}` |
//! | responses | `{"type":"input_image","image_url":"data:image/png;base64,..."}` |
//! | messages | `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"..."}}` |

use std::path::{Path, PathBuf};

use base64::Engine as _;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use serde_json::{Value, json};

use super::lengths::LengthSampler;
use crate::target::Api;

/// An image encoding (`--image-format`, parsed by clap into this type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    /// PNG.
    #[value(help = "PNG (lossless)")]
    Png,
    /// JPEG.
    #[value(help = "JPEG (quality 85)")]
    Jpeg,
}

impl ImageFormat {
    /// The MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }

    /// The format a file's name says, when it says one this module reads.
    pub fn of_path(p: &Path) -> Option<ImageFormat> {
        let ext = p.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "png" => Some(ImageFormat::Png),
            "jpg" | "jpeg" => Some(ImageFormat::Jpeg),
            _ => None,
        }
    }
}

/// Where images come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageSource {
    /// Drawn from the seed.
    Synthetic {
        /// Width in pixels: mean and standard deviation.
        width: (u32, u32),
        /// Height in pixels: mean and standard deviation.
        height: (u32, u32),
        /// The encoding; `None`: each image's drawn from the seed (GenAI-Perf's default).
        format: Option<ImageFormat>,
    },
    /// The image files of a directory, in name order.
    Dir {
        /// The directory.
        path: PathBuf,
        /// Its image files.
        files: Vec<PathBuf>,
    },
}

/// `--image-*`, `--batch-size-image`: what images each prompt carries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImagePlan {
    /// Where they come from.
    pub source: ImageSource,
    /// Images per request.
    pub per_request: u32,
}

/// One encoded image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The encoded file.
    pub bytes: Vec<u8>,
    /// Its encoding.
    pub format: ImageFormat,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// The largest side accepted for a synthetic image: beyond it a prompt's images would not fit
/// in any server's request limit anyway.
pub const MAX_SIDE: u32 = 8192;

/// Mixed into the seed so image sizes and pixels draw their own random streams.
const IMAGE_SEED_SALT: u64 = 0x5eed_1a9e_0000_0001;

impl Image {
    /// The base64 text of the file.
    pub fn base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.bytes)
    }

    /// The content part carrying it in `api`'s request form (see the module's table).
    pub fn content_part(&self, api: Api) -> Value {
        let b64 = self.base64();
        let mime = self.format.mime();
        let url = format!("data:{mime};base64,{b64}");
        match api {
            Api::Messages => {
                json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": b64}})
            }
            Api::Responses => json!({"type": "input_image", "image_url": url}),
            _ => json!({"type": "image_url", "image_url": {"url": url}}),
        }
    }
}

/// An image file that cannot be sent: the file and why. The plan puts `--image-dir` in front,
/// as a usage error.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Not named as a PNG or JPEG.
    #[error("{}: not a .png, .jpg or .jpeg file", .0.display())]
    NotImageFile(PathBuf),
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not an image the `image` crate reads.
    #[error("{}: not a readable image ({source})", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        source: image::ImageError,
    },
}

impl ImagePlan {
    /// The `count` images the run's prompts carry, in order, for `seed`: synthetic ones drawn
    /// and encoded here, or a directory's files read (round robin). `Err` names the file that
    /// could not be read.
    pub fn images(&self, seed: u64, count: usize) -> Result<Vec<Image>, ImageError> {
        match &self.source {
            ImageSource::Synthetic {
                width,
                height,
                format,
            } => Ok(synthetic(*width, *height, *format, seed, count)),
            ImageSource::Dir { files, .. } => {
                let read: Vec<Image> = files
                    .iter()
                    .take(count)
                    .map(|f| read_image(f))
                    .collect::<Result<_, _>>()?;
                Ok((0..count).map(|i| read[i % read.len()].clone()).collect())
            }
        }
    }
}

/// `count` synthetic images: sizes from normals (at least 1 pixel, at most [`MAX_SIDE`]),
/// formats as given or drawn, pixels from the seed.
pub fn synthetic(
    width: (u32, u32),
    height: (u32, u32),
    format: Option<ImageFormat>,
    seed: u64,
    count: usize,
) -> Vec<Image> {
    let seed = seed ^ IMAGE_SEED_SALT;
    let widths = LengthSampler::new(width.0, width.1).seeded(seed, count);
    let heights = LengthSampler::new(height.0, height.1).seeded(seed.rotate_left(17), count);
    let mut rng = StdRng::seed_from_u64(seed.rotate_left(31));
    (0..count)
        .map(|i| {
            let f = format.unwrap_or(match rng.random_range(0..2) {
                0 => ImageFormat::Png,
                _ => ImageFormat::Jpeg,
            });
            let (w, h) = (widths[i].min(MAX_SIDE), heights[i].min(MAX_SIDE));
            draw(w, h, f, rng.random::<u64>())
        })
        .collect()
}

/// One image of `w`×`h` in format `f`: a gradient with a checker and per-pixel noise from
/// `seed` (noise, so a PNG does not shrink to nothing as a flat picture would; a photo's
/// entropy is nearer this than a flat fill's).
pub fn draw(w: u32, h: u32, f: ImageFormat, seed: u64) -> Image {
    let base = [(seed & 0xff) as u8, (seed >> 8) as u8, (seed >> 16) as u8];
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let mut n = seed ^ (u64::from(x) << 32 | u64::from(y)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        n ^= n >> 29;
        n = n.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        n ^= n >> 32;
        let noise = (n & 0x1f) as u8;
        let checker = if (x / 16 + y / 16) % 2 == 0 { 48 } else { 0 };
        image::Rgb([
            base[0].wrapping_add((x * 255 / w.max(1)) as u8) ^ noise,
            base[1]
                .wrapping_add((y * 255 / h.max(1)) as u8)
                .wrapping_add(checker),
            base[2].wrapping_add(noise),
        ])
    });
    Image {
        bytes: encode(&img, f),
        format: f,
        width: w,
        height: h,
    }
}

/// The encoded file of `img`.
fn encode(img: &image::RgbImage, f: ImageFormat) -> Vec<u8> {
    use image::ImageEncoder as _;
    let mut out = Vec::new();
    let (w, h) = img.dimensions();
    let rgb = image::ExtendedColorType::Rgb8;
    // Encoding an in-memory RGB buffer of the right size into a Vec cannot fail.
    let _ = match f {
        ImageFormat::Png => {
            image::codecs::png::PngEncoder::new(&mut out).write_image(img.as_raw(), w, h, rgb)
        }
        ImageFormat::Jpeg => image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85)
            .write_image(img.as_raw(), w, h, rgb),
    };
    out
}

/// An image file read whole, its size read from its header.
pub fn read_image(path: &Path) -> Result<Image, ImageError> {
    let format = ImageFormat::of_path(path).ok_or_else(|| ImageError::NotImageFile(path.into()))?;
    let read = |source| ImageError::Read {
        path: path.into(),
        source,
    };
    let bytes = std::fs::read(path).map_err(read)?;
    let (width, height) = image::ImageReader::new(std::io::Cursor::new(&bytes))
        .with_guessed_format()
        .map_err(read)?
        .into_dimensions()
        .map_err(|source| ImageError::Unreadable {
            path: path.into(),
            source,
        })?;
    Ok(Image {
        bytes,
        format,
        width,
        height,
    })
}

/// The image files of a directory (`.png`, `.jpg`, `.jpeg`, any case), in name order.
pub fn image_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && ImageFormat::of_path(p).is_some())
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same seed draws the same images; sizes follow the flags; both encodings decode back
    /// to the drawn size.
    #[test]
    fn synthetic_images_are_seeded_and_decodable() {
        let a = synthetic((64, 0), (32, 0), None, 7, 6);
        let b = synthetic((64, 0), (32, 0), None, 7, 6);
        assert_eq!(a, b);
        assert_ne!(a, synthetic((64, 0), (32, 0), None, 8, 6));
        let formats: Vec<ImageFormat> = a.iter().map(|i| i.format).collect();
        assert!(formats.contains(&ImageFormat::Png) && formats.contains(&ImageFormat::Jpeg));
        for img in &a {
            assert_eq!((img.width, img.height), (64, 32));
            let decoded = image::load_from_memory(&img.bytes).unwrap();
            assert_eq!((decoded.width(), decoded.height()), (64, 32));
            let magic: &[u8] = match img.format {
                ImageFormat::Png => b"\x89PNG",
                ImageFormat::Jpeg => b"\xff\xd8\xff",
            };
            assert!(img.bytes.starts_with(magic));
        }
        let spread = synthetic((100, 30), (50, 10), Some(ImageFormat::Png), 1, 20);
        assert!(spread.iter().any(|i| i.width != 100));
        assert!(spread.iter().all(|i| i.format == ImageFormat::Png));
    }

    /// Each API's content part, exactly (a 1×1 image keeps the base64 short).
    #[test]
    fn content_parts_per_api() {
        let img = Image {
            bytes: b"abc".to_vec(),
            format: ImageFormat::Jpeg,
            width: 1,
            height: 1,
        };
        assert_eq!(
            img.content_part(Api::Chat).to_string(),
            r#"{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,YWJj"}}"#
        );
        assert_eq!(
            img.content_part(Api::Responses).to_string(),
            r#"{"type":"input_image","image_url":"data:image/jpeg;base64,YWJj"}"#
        );
        assert_eq!(
            img.content_part(Api::Messages).to_string(),
            r#"{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"YWJj"}}"#
        );
    }

    #[test]
    fn directory_images_round_robin() {
        let dir = tempfile::tempdir().unwrap();
        for (name, f) in [("b.png", ImageFormat::Png), ("a.JPG", ImageFormat::Jpeg)] {
            std::fs::write(dir.path().join(name), draw(8, 4, f, 1).bytes).unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let files = image_files(dir.path()).unwrap();
        assert_eq!(files.len(), 2);
        let plan = ImagePlan {
            source: ImageSource::Dir {
                path: dir.path().into(),
                files,
            },
            per_request: 1,
        };
        let imgs = plan.images(0, 3).unwrap();
        let formats: Vec<_> = imgs.iter().map(|i| i.format).collect();
        assert_eq!(
            formats,
            [ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Jpeg]
        );
        assert_eq!((imgs[0].width, imgs[0].height), (8, 4));
        std::fs::write(dir.path().join("c.png"), "not an image").unwrap();
        let files = image_files(dir.path()).unwrap();
        let e = read_image(&files[2]).unwrap_err().to_string();
        assert!(
            e.contains("c.png") && e.contains("not a readable image"),
            "{e}"
        );
    }
}
