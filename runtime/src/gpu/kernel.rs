//! A compute kernel: shader module + pipeline whose only input is a push-constant
//! block (buffer addresses and sizes). The SPIR-V comes from `shaders.rs`.

use super::context::SharedRef;
use super::error::{GpuError, VkContext};
use super::shaders::Shader;
use ash::vk;

/// A compiled compute pipeline.
pub struct Kernel {
    shared: SharedRef,
    pub(crate) pipeline: vk::Pipeline,
    pub(crate) layout: vk::PipelineLayout,
    module: vk::ShaderModule,
    pub(crate) push_bytes: u32,
    pub(crate) local_size: u32,
    pub(crate) name: &'static str,
}

impl Kernel {
    pub(crate) fn new(shared: &SharedRef, shader: &Shader) -> Result<Kernel, GpuError> {
        let code = shader.words()?;
        let device = &shared.device;
        // SAFETY: `code` is SPIR-V validated by spirv-val at build time.
        let module = unsafe { device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None) }
            .call("vkCreateShaderModule")?;
        let ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .offset(0)
            .size(shader.push_bytes)];
        let layout_info = vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&ranges);
        // SAFETY: valid create info.
        let layout = match unsafe { device.create_pipeline_layout(&layout_info, None) } {
            Ok(layout) => layout,
            Err(result) => {
                // SAFETY: the module is unused.
                unsafe { device.destroy_shader_module(module, None) };
                return Err(GpuError::vk("vkCreatePipelineLayout", result));
            }
        };
        // Specialization constant 0 is the workgroup size (`local_size_x_id = 0`).
        let entries = [vk::SpecializationMapEntry { constant_id: 0, offset: 0, size: 4 }];
        let local_size = shader.local_size.to_ne_bytes();
        let specialization = vk::SpecializationInfo::default().map_entries(&entries).data(&local_size);
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main")
            .specialization_info(&specialization);
        let info = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)];
        // SAFETY: module and layout are live; one create info.
        let pipeline = match unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &info, None) } {
            Ok(pipelines) => pipelines[0],
            Err((_, result)) => {
                // SAFETY: neither object is used by anything else.
                unsafe {
                    device.destroy_pipeline_layout(layout, None);
                    device.destroy_shader_module(module, None);
                }
                return Err(GpuError::vk("vkCreateComputePipelines", result));
            }
        };
        shared.name_object(pipeline, shader.name);
        Ok(Kernel {
            shared: shared.clone(),
            pipeline,
            layout,
            module,
            push_bytes: shader.push_bytes,
            local_size: shader.local_size,
            name: shader.name,
        })
    }

    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        // SAFETY: Kiln's submissions complete before returning; the objects belong to
        // this device.
        unsafe {
            self.shared.device.destroy_pipeline(self.pipeline, None);
            self.shared.device.destroy_pipeline_layout(self.layout, None);
            self.shared.device.destroy_shader_module(self.module, None);
        }
    }
}
